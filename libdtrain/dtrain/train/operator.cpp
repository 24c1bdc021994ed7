#include "dtrain/train/operator.hpp"

#include <map>
#include <mutex>

#include "dtrain/train/builtin_operators.hpp"

namespace dtrain::train {

namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, operator_factory> factories;
};

// Built on first use: safe from static initializers. It starts out holding
// the built-in operators, because static registration objects in a static
// library are dropped by the linker when nothing references their file.
// Seeding here (not by calling register_operator) cannot re-enter the_registry()
// or its lock, and any later register_operator replaces a built-in as documented.
registry& the_registry() {
  static registry r;
  static const bool seeded = [] {
    for (auto& [name, factory] : builtin_operator_factories())
      r.factories.emplace(name, std::move(factory));
    return true;
  }();
  (void)seeded;
  return r;
}

} // namespace

void register_operator(const std::string& name, operator_factory factory) {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> registered_operators() {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (auto& [name, factory] : r.factories)
    names.push_back(name);
  return names;
}

result<std::unique_ptr<training_operator>> make_operator(const std::string& name) {
  operator_factory factory;
  {
    auto& r = the_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(name);
    if (it != r.factories.end())
      factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (auto& n : registered_operators())
      known += (known.empty() ? "" : ", ") + n;
    return not_found("no training operator named '" + name + "' (registered: " + known + ")");
  }
  auto op = factory();
  if (op == nullptr)
    return status(error_code::internal, "the factory of operator '" + name + "' returned null");
  return op;
}

} // namespace dtrain::train
