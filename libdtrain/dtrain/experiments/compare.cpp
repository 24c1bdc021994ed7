// Comparing experiments: a stable hash of the canonical YAML, and the key
// paths where two of them differ (a resumed experiment whose file changed).
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/hash.hpp"

namespace dtrain::experiments {

namespace {

// Every scalar of `node` under its key path: "a.b", "list[2]", "a.b[0].c".
void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        flatten(kv.second, path.empty() ? key : path + "." + key, out);
      }
      if (node.size() == 0)
        out[path] = "{}";
      break;
    case YAML::NodeType::Sequence:
      for (size_t i = 0; i < node.size(); ++i)
        flatten(node[i], path + "[" + std::to_string(i) + "]", out);
      if (node.size() == 0)
        out[path] = "[]";
      break;
    case YAML::NodeType::Scalar:
      out[path] = node.Scalar();
      break;
    default:
      out[path] = "null";
  }
}

} // namespace

std::string config_hash(const std::string& canonical_yaml) {
  return hash::hex16(hash::fnv1a(canonical_yaml));
}

std::vector<std::string> config_differences(const std::string& before_yaml,
                                            const std::string& after_yaml) {
  std::map<std::string, std::string> before, after;
  try {
    flatten(YAML::Load(before_yaml), "", before);
  } catch (const std::exception& e) {
    return {std::string("the stored configuration does not parse: ") + e.what()};
  }
  try {
    flatten(YAML::Load(after_yaml), "", after);
  } catch (const std::exception& e) {
    return {std::string("the new configuration does not parse: ") + e.what()};
  }
  std::vector<std::string> out;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      out.push_back(b->first + ": " + b->second + " -> (none)");
      ++b;
    } else if (b == before.end() || a->first < b->first) {
      out.push_back(a->first + ": (none) -> " + a->second);
      ++a;
    } else {
      if (a->second != b->second)
        out.push_back(a->first + ": " + b->second + " -> " + a->second);
      ++a;
      ++b;
    }
  }
  return out;
}

} // namespace dtrain::experiments
