#pragma once

// Reading experiment files: the helpers every section reader shares
// (config/experiment.cpp, config/search_reading.cpp). Internal to config/.
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::experiments::detail {

/// The one YAML document of `yaml_text` (a null node for none). Every error
/// is invalid_argument starting with `source_name`, for syntax the 1-based
/// line and column, compiler style ("exp.yaml:3:7: YAML syntax error:
/// ..."): yaml-cpp's exceptions stop here; more than one document, a
/// control character other than tab and line breaks, and a stream that
/// yaml-cpp would never finish reading are errors too (yaml_loading.cpp).
result<YAML::Node> load_document(const std::string& yaml_text, const std::string& source_name);

// ---------------------------------------------------------------------------
// Reading one map of settings. Every error names the key's full path
// ("resources.slots_per_trial"); parse_experiment puts the file name before.

inline std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// What a node holds, as an error message says it.
inline std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
  case YAML::NodeType::Sequence: return "a list";
  case YAML::NodeType::Map: return "a map";
  default: return "nothing";
  }
}

inline status wrong_type(const std::string& path, const std::string& expected,
                  const YAML::Node& node) {
  return invalid_argument(path + ": expected " + expected + ", got " + describe(node));
}

// Empty items keep their separators: ["", ""] is ",", so that a list read
// back from to_yaml (a value with commas is written as a list) is the value.
inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : sep) + items[i];
  return out;
}

/// The entries of one YAML map whose keys were all found in a fixed list.
struct section {
  std::string path;  // "" for the top level
  std::map<std::string, YAML::Node> entries;

  const YAML::Node* find(const std::string& key) const {
    auto it = entries.find(key);
    return it == entries.end() ? nullptr : &it->second;
  }
  std::string path_of(const std::string& key) const { return join_path(path, key); }
};

// Checks that `node` is a map (an empty `resources:` counts as an empty
// one) whose keys are unique strings from `known`.
inline result<section> open_section(const YAML::Node& node, const std::string& path,
                             std::vector<std::string> known) {
  section out{path, {}};
  if (node.IsNull())
    return out;
  if (!node.IsMap())
    return wrong_type(path.empty() ? "the top level" : path, "a map of settings", node);
  std::sort(known.begin(), known.end());
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return wrong_type(path.empty() ? "a top-level key" : path + " key", "a name", entry.first);
    const std::string& key = entry.first.Scalar();
    if (!std::binary_search(known.begin(), known.end(), key))
      return invalid_argument(join_path(path, key) + ": unknown key (known: " +
                              join(known, ", ") + ")");
    if (!out.entries.emplace(key, entry.second).second)
      return invalid_argument(join_path(path, key) + ": duplicate key");
  }
  return out;
}

inline result<int64_t> parse_int(const std::string& path, const YAML::Node& node) {
  if (!node.IsScalar())
    return wrong_type(path, "an integer", node);
  const std::string& text = node.Scalar();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    return invalid_argument(path + ": " + text + " does not fit in 64 bits");
  if (ec != std::errc() || end != text.data() + text.size())
    return wrong_type(path, "an integer", node);
  return value;
}

// Reads an optional integer in [min, max] into `out`; absent leaves it be.
template <class Int>
status read_int(const section& s, const std::string& key, int64_t min, Int& out) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  const std::string path = s.path_of(key);
  DTRAIN_ASSIGN_OR_RETURN(int64_t value, parse_int(path, *node));
  const int64_t max = std::numeric_limits<Int>::max();
  if (value < min)
    return invalid_argument(path + ": must be at least " + std::to_string(min) + ", got " +
                            std::to_string(value));
  if (value > max)
    return invalid_argument(path + ": must be at most " + std::to_string(max) + ", got " +
                            std::to_string(value));
  out = static_cast<Int>(value);
  return status::ok();
}

// A seed uses the whole unsigned 64-bit range, past int64's.
inline status read_seed(const section& s, const std::string& key, uint64_t& out) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  const std::string path = s.path_of(key);
  if (!node->IsScalar())
    return wrong_type(path, "a non-negative integer", *node);
  const std::string& text = node->Scalar();
  if (!text.empty() && text[0] == '-' && parse_int(path, *node).is_ok())
    return invalid_argument(path + ": must be at least 0, got " + text);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec == std::errc::result_out_of_range)
    return invalid_argument(path + ": " + text + " does not fit in 64 bits");
  if (ec != std::errc() || end != text.data() + text.size())
    return wrong_type(path, "a non-negative integer", *node);
  return status::ok();
}

// YAML 1.1's spellings, which yaml-cpp also reads as booleans.
inline result<bool> parse_bool(const std::string& path, const YAML::Node& node) {
  if (node.IsScalar()) {
    std::string text = node.Scalar();
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (text == "true" || text == "yes" || text == "on")
      return true;
    if (text == "false" || text == "no" || text == "off")
      return false;
  }
  return wrong_type(path, "true or false", node);
}

inline status read_bool(const section& s, const std::string& key, bool& out) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(out, parse_bool(s.path_of(key), *node));
  return status::ok();
}

// Reads an optional non-empty text; with `choices`, one of them.
inline status read_string(const section& s, const std::string& key, std::string& out,
                   const std::vector<std::string>& choices = {}) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  const std::string path = s.path_of(key);
  const std::string expected =
      choices.empty() ? "a non-empty string" : "one of " + join(choices, ", ");
  if (!node->IsScalar() || node->Scalar().empty())
    return wrong_type(path, expected, *node);
  const std::string& text = node->Scalar();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), text) == choices.end())
    return wrong_type(path, expected, *node);
  out = text;
  return status::ok();
}

inline status require(const section& s, const std::string& key) {
  return s.find(key) ? status::ok() : invalid_argument(s.path_of(key) + ": missing required key");
}

// Scalars keep their text; a list of scalars becomes "a,b,c".
inline result<std::string> hyperparameter_text(const std::string& path, const YAML::Node& node) {
  const std::string expected = "a scalar, a list of scalars or a typed hyperparameter (type:)";
  if (node.IsScalar())
    return node.Scalar();
  if (!node.IsSequence())
    return wrong_type(path, expected, node);
  std::vector<std::string> items;
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar())
      return wrong_type(path + "[" + std::to_string(i) + "]", "a scalar", node[i]);
    items.push_back(node[i].Scalar());
  }
  return join(items, ",");
}

// A setting spelled two ways (dtrain's and Determined's): both may appear
// only if they agree.
template <class T>
status merge_alias(const std::string& main_path, std::optional<T> main,
                   const std::string& alias_path, std::optional<T> alias, T& out) {
  if (main && alias && *main != *alias)
    return invalid_argument(main_path + ": " + std::to_string(*main) + " contradicts " +
                            alias_path + ": " + std::to_string(*alias));
  if (main || alias)
    out = main ? *main : *alias;
  return status::ok();
}

template <class T>
result<std::optional<T>> read_optional_int(const section& s, const std::string& key,
                                           int64_t min) {
  T value{};
  DTRAIN_RETURN_IF_ERROR(read_int(s, key, min, value));
  return s.find(key) ? std::optional<T>(value) : std::nullopt;
}

inline result<std::optional<uint64_t>> read_optional_seed(const section& s, const std::string& key) {
  uint64_t value = 0;
  DTRAIN_RETURN_IF_ERROR(read_seed(s, key, value));
  return s.find(key) ? std::optional<uint64_t>(value) : std::nullopt;
}

inline result<double> parse_double(const std::string& path, const YAML::Node& node) {
  if (!node.IsScalar() || node.Scalar().empty())
    return wrong_type(path, "a number", node);
  const std::string& text = node.Scalar();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value) || errno == ERANGE)
    return wrong_type(path, "a finite number", node);
  return value;
}

// Reads an optional number of at least `min` into `out`.
inline status read_double(const section& s, const std::string& key, double min, double& out) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  const std::string path = s.path_of(key);
  DTRAIN_ASSIGN_OR_RETURN(double value, parse_double(path, *node));
  if (value < min)
    return invalid_argument(path + ": must be at least " + tune::to_string(tune::value{min}) +
                            ", got " + node->Scalar());
  out = value;
  return status::ok();
}

} // namespace dtrain::experiments::detail
