#include "dtrain/config/experiment.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "dtrain/core/check.hpp"

namespace dtrain::config {
namespace {

// ---------------------------------------------------------------------------
// Reading one map of settings. Every error names the key's full path
// ("resources.slots_per_trial"); parse_experiment puts the file name before.

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// What a node holds, as an error message says it.
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
  case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
  case YAML::NodeType::Sequence: return "a list";
  case YAML::NodeType::Map: return "a map";
  default: return "nothing";
  }
}

status wrong_type(const std::string& path, const std::string& expected,
                  const YAML::Node& node) {
  return invalid_argument(path + ": expected " + expected + ", got " + describe(node));
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : sep) + item;
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
result<section> open_section(const YAML::Node& node, const std::string& path,
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

result<int64_t> parse_int(const std::string& path, const YAML::Node& node) {
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
status read_seed(const section& s, const std::string& key, uint64_t& out) {
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
result<bool> parse_bool(const std::string& path, const YAML::Node& node) {
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

status read_bool(const section& s, const std::string& key, bool& out) {
  const YAML::Node* node = s.find(key);
  if (!node)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(out, parse_bool(s.path_of(key), *node));
  return status::ok();
}

// Reads an optional non-empty text; with `choices`, one of them.
status read_string(const section& s, const std::string& key, std::string& out,
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

status require(const section& s, const std::string& key) {
  return s.find(key) ? status::ok() : invalid_argument(s.path_of(key) + ": missing required key");
}

// ---------------------------------------------------------------------------
// The sections of an experiment file.

// Scalars keep their text; a list of scalars becomes "a,b,c".
result<std::string> hyperparameter_text(const std::string& path, const YAML::Node& node) {
  const std::string expected = "a scalar or a list of scalars";
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

status read_hyperparameters(const YAML::Node& node, experiment& exp) {
  const std::string path = "hyperparameters";
  if (node.IsNull())
    return status::ok();
  if (!node.IsMap())
    return wrong_type(path, "a map of names to values", node);
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return wrong_type(path + " key", "a name", entry.first);
    const std::string key = join_path(path, entry.first.Scalar());
    DTRAIN_ASSIGN_OR_RETURN(std::string text, hyperparameter_text(key, entry.second));
    if (!exp.hyperparameters.emplace(entry.first.Scalar(), std::move(text)).second)
      return invalid_argument(key + ": duplicate key");
  }
  return status::ok();
}

status read_resources(const YAML::Node& node, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(section s,
                          open_section(node, "resources",
                                       {"slots_per_trial", "min_slots_per_trial", "use_gpu", "backend"}));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "slots_per_trial", 1, exp.slots_per_trial));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "min_slots_per_trial", 0, exp.min_slots_per_trial));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "use_gpu", exp.use_gpu));
  return read_string(s, "backend", exp.backend, {"auto", "shm", "gloo", "hierarchical", "nccl"});
}

// dtrain's none|fp16|bf16, or Determined's boolean (true means fp16).
status read_compression(const section& s, std::string& out) {
  const YAML::Node* node = s.find("gradient_compression");
  if (!node)
    return status::ok();
  const std::string path = s.path_of("gradient_compression");
  const std::vector<std::string> names = {"none", "fp16", "bf16"};
  if (node->IsScalar() &&
      std::find(names.begin(), names.end(), node->Scalar()) != names.end()) {
    out = node->Scalar();
    return status::ok();
  }
  auto flag = parse_bool(path, *node);
  if (!flag)
    return wrong_type(path, "none, fp16, bf16 or a boolean", *node);
  out = *flag ? "fp16" : "none";
  return status::ok();
}

status read_optimizations(const YAML::Node& node, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(
      section s, open_section(node, "optimizations", {"aggregation_frequency",
                                                      "average_training_metrics",
                                                      "gradient_compression"}));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "aggregation_frequency", 1, exp.aggregation_frequency));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "average_training_metrics", exp.average_training_metrics));
  return read_compression(s, exp.gradient_compression);
}

status read_checkpoint_storage(const YAML::Node& node, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, "checkpoint_storage",
                                                  {"type", "host_path", "save_trial_latest"}));
  std::string type = "shared_fs";  // Determined's; the only kind dtrain writes
  DTRAIN_RETURN_IF_ERROR(read_string(s, "type", type, {"shared_fs"}));
  DTRAIN_RETURN_IF_ERROR(read_string(s, "host_path", exp.checkpoint_dir));
  return read_int(s, "save_trial_latest", 0, exp.checkpoint_keep);
}

// Determined's searcher: dtrain train runs one trial, so only the length
// counts; name, metric and smaller_is_better are checked, then ignored.
status read_searcher(const YAML::Node& node, std::optional<int64_t>& epochs) {
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, "searcher", {"name", "metric",
                                                                     "smaller_is_better",
                                                                     "max_length"}));
  std::string ignored;
  bool ignored_flag = false;
  DTRAIN_RETURN_IF_ERROR(read_string(s, "name", ignored, {"single"}));
  DTRAIN_RETURN_IF_ERROR(read_string(s, "metric", ignored));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "smaller_is_better", ignored_flag));
  const YAML::Node* length = s.find("max_length");
  if (!length)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(section l, open_section(*length, "searcher.max_length", {"epochs"}));
  int64_t value = 0;
  DTRAIN_RETURN_IF_ERROR(read_int(l, "epochs", 1, value));
  if (l.find("epochs"))
    epochs = value;
  return status::ok();
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

result<std::optional<uint64_t>> read_optional_seed(const section& s, const std::string& key) {
  uint64_t value = 0;
  DTRAIN_RETURN_IF_ERROR(read_seed(s, key, value));
  return s.find(key) ? std::optional<uint64_t>(value) : std::nullopt;
}

status read_aliased(const section& top, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(auto epochs, read_optional_int<int64_t>(top, "epochs", 1));
  std::optional<int64_t> searcher_epochs;
  if (const YAML::Node* node = top.find("searcher"))
    DTRAIN_RETURN_IF_ERROR(read_searcher(*node, searcher_epochs));
  DTRAIN_RETURN_IF_ERROR(merge_alias("epochs", epochs, "searcher.max_length.epochs",
                                     searcher_epochs, exp.epochs));

  DTRAIN_ASSIGN_OR_RETURN(auto seed, read_optional_seed(top, "seed"));
  std::optional<uint64_t> experiment_seed;
  if (const YAML::Node* node = top.find("reproducibility")) {
    DTRAIN_ASSIGN_OR_RETURN(section r, open_section(*node, "reproducibility", {"experiment_seed"}));
    DTRAIN_ASSIGN_OR_RETURN(experiment_seed, read_optional_seed(r, "experiment_seed"));
  }
  DTRAIN_RETURN_IF_ERROR(merge_alias("seed", seed, "reproducibility.experiment_seed",
                                     experiment_seed, exp.seed));

  DTRAIN_ASSIGN_OR_RETURN(auto restarts, read_optional_int<int>(top, "max_restarts", 0));
  DTRAIN_ASSIGN_OR_RETURN(auto failures, read_optional_int<int>(top, "max_failures", 0));
  return merge_alias("max_restarts", restarts, "max_failures", failures, exp.max_failures);
}

// Rules across sections, checked once every value is known.
status check_consistency(const experiment& exp) {
  if (exp.global_batch_size < exp.slots_per_trial)
    return invalid_argument("global_batch_size: " + std::to_string(exp.global_batch_size) +
                            " is less than resources.slots_per_trial (" +
                            std::to_string(exp.slots_per_trial) +
                            "): every slot needs at least one sample per batch");
  if (exp.min_slots_per_trial > exp.slots_per_trial)
    return invalid_argument("resources.min_slots_per_trial: " +
                            std::to_string(exp.min_slots_per_trial) +
                            " is more than resources.slots_per_trial (" +
                            std::to_string(exp.slots_per_trial) + ")");
  if (exp.backend == "nccl" && !exp.use_gpu)
    return invalid_argument("resources.backend: nccl needs resources.use_gpu: true");
  return status::ok();
}

result<experiment> read_experiment(const YAML::Node& root) {
  DTRAIN_ASSIGN_OR_RETURN(
      section top, open_section(root, "", {"name", "operator", "hyperparameters", "resources",
                                           "global_batch_size", "epochs", "searcher",
                                           "optimizations", "checkpoint_storage",
                                           "reproducibility", "seed", "max_restarts",
                                           "max_failures"}));
  experiment exp;
  DTRAIN_RETURN_IF_ERROR(require(top, "name"));
  DTRAIN_RETURN_IF_ERROR(read_string(top, "name", exp.name));
  DTRAIN_RETURN_IF_ERROR(read_string(top, "operator", exp.operator_name));
  if (const YAML::Node* node = top.find("hyperparameters"))
    DTRAIN_RETURN_IF_ERROR(read_hyperparameters(*node, exp));
  if (const YAML::Node* node = top.find("resources"))
    DTRAIN_RETURN_IF_ERROR(read_resources(*node, exp));
  DTRAIN_RETURN_IF_ERROR(require(top, "global_batch_size"));
  DTRAIN_RETURN_IF_ERROR(read_int(top, "global_batch_size", 1, exp.global_batch_size));
  if (const YAML::Node* node = top.find("optimizations"))
    DTRAIN_RETURN_IF_ERROR(read_optimizations(*node, exp));
  if (const YAML::Node* node = top.find("checkpoint_storage"))
    DTRAIN_RETURN_IF_ERROR(read_checkpoint_storage(*node, exp));
  DTRAIN_RETURN_IF_ERROR(read_aliased(top, exp));
  DTRAIN_RETURN_IF_ERROR(check_consistency(exp));
  return exp;
}

// yaml-cpp reports syntax errors by exception; they stop here, as values
// that name the 1-based line and column, compiler style ("exp.yaml:3:7: ...").
result<YAML::Node> load_document(const std::string& yaml_text, const std::string& source_name) {
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(yaml_text);
    if (documents.size() > 1)
      return invalid_argument(source_name + ": expected one YAML document, got " +
                              std::to_string(documents.size()));
    return documents.empty() ? YAML::Node() : documents.front();
  } catch (const YAML::Exception& e) {
    std::string where = source_name;
    if (!e.mark.is_null())
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return invalid_argument(where + ": YAML syntax error: " + e.msg);
  }
}

// ---------------------------------------------------------------------------
// Writing.

void emit_hyperparameter(YAML::Emitter& out, const std::string& text) {
  if (text.find(',') == std::string::npos) {
    out << text;
    return;
  }
  out << YAML::Flow << YAML::BeginSeq;
  size_t begin = 0;
  for (;;) {
    size_t comma = text.find(',', begin);
    out << text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  out << YAML::EndSeq;
}

void emit_hyperparameters(YAML::Emitter& out, const experiment& exp) {
  out << YAML::Key << "hyperparameters" << YAML::Value;
  if (exp.hyperparameters.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  out << YAML::BeginMap;
  for (const auto& [key, text] : exp.hyperparameters) {
    out << YAML::Key << key << YAML::Value;
    emit_hyperparameter(out, text);
  }
  out << YAML::EndMap;
}

} // namespace

result<experiment> parse_experiment(const std::string& yaml_text,
                                    const std::string& source_name) {
  DTRAIN_ASSIGN_OR_RETURN(YAML::Node root, load_document(yaml_text, source_name));
  try {
    auto exp = read_experiment(root);
    if (!exp)
      return exp.error().with_context(source_name);
    return exp;
  } catch (const YAML::Exception& e) {
    // read_experiment checks each node's kind before it looks inside, so
    // this is a dtrain bug; still, no exception leaves the API.
    return status(error_code::internal, source_name + ": reading the YAML tree: " + e.msg);
  }
}

result<experiment> load_experiment(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    const int err = errno;
    if (err == ENOENT)
      return not_found(path + ": no such experiment file");
    return io_error(path + ": cannot open: " + std::strerror(err));
  }
  std::string text;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    text.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int err = errno;
  std::fclose(file);
  if (failed)
    return io_error(path + ": cannot read: " + std::strerror(err));
  return parse_experiment(text, path);
}

std::string to_yaml(const experiment& exp) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << exp.name;
  out << YAML::Key << "operator" << YAML::Value << exp.operator_name;
  emit_hyperparameters(out, exp);
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap
      << YAML::Key << "slots_per_trial" << YAML::Value << exp.slots_per_trial
      << YAML::Key << "min_slots_per_trial" << YAML::Value << exp.min_slots_per_trial
      << YAML::Key << "use_gpu" << YAML::Value << exp.use_gpu
      << YAML::Key << "backend" << YAML::Value << exp.backend << YAML::EndMap;
  out << YAML::Key << "global_batch_size" << YAML::Value << exp.global_batch_size;
  out << YAML::Key << "epochs" << YAML::Value << exp.epochs;
  out << YAML::Key << "optimizations" << YAML::Value << YAML::BeginMap
      << YAML::Key << "aggregation_frequency" << YAML::Value << exp.aggregation_frequency
      << YAML::Key << "average_training_metrics" << YAML::Value << exp.average_training_metrics
      << YAML::Key << "gradient_compression" << YAML::Value << exp.gradient_compression
      << YAML::EndMap;
  out << YAML::Key << "checkpoint_storage" << YAML::Value << YAML::BeginMap;
  if (!exp.checkpoint_dir.empty())
    out << YAML::Key << "host_path" << YAML::Value << exp.checkpoint_dir;
  out << YAML::Key << "save_trial_latest" << YAML::Value << exp.checkpoint_keep << YAML::EndMap;
  out << YAML::Key << "seed" << YAML::Value << exp.seed;
  out << YAML::Key << "max_restarts" << YAML::Value << exp.max_failures;
  out << YAML::EndMap;
  DTRAIN_CHECK(out.good(), out.GetLastError().c_str());
  return std::string(out.c_str()) + "\n";
}

} // namespace dtrain::config
