#include "dtrain/train/operator.hpp"

#include <map>
#include <mutex>

namespace dtrain::train {

namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, operator_factory> factories;
};

registry& the_registry() {
  static registry r;  // built on first use: safe from static initializers
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
