#include "dtrain/config/experiment.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
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

result<double> parse_double(const std::string& path, const YAML::Node& node) {
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
status read_double(const section& s, const std::string& key, double min, double& out) {
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

// The searcher section, Determined's keys and dtrain's extras.
const std::vector<std::string> search_only_keys = {
    "max_trials", "num_samples", "max_concurrent_trials", "scheduler", "divisor",
    "reduction_factor", "grace_period", "rule", "median_warmup_epochs",
    "median_min_completed_trials", "time_budget_seconds", "stop_threshold", "max_failed_trials"};

// How many trials: max_trials (random, asha) or num_samples (grid, or an
// alias under random and asha).
status read_trial_count(const section& s, const std::string& name, tune::sweep_config& sweep) {
  DTRAIN_ASSIGN_OR_RETURN(auto samples, read_optional_int<int64_t>(s, "num_samples", 1));
  DTRAIN_ASSIGN_OR_RETURN(auto trials, read_optional_int<int64_t>(s, "max_trials", 1));
  if (name == "grid") {
    if (trials)
      return invalid_argument(s.path_of("max_trials") + ": the grid searcher runs every grid " +
                              "point; use num_samples to repeat the grid");
    sweep.num_samples = samples.value_or(1);
    return status::ok();
  }
  if (!trials && !samples)
    return invalid_argument(s.path_of("max_trials") + ": missing required key (the " + name +
                            " searcher's number of trials)");
  return merge_alias(s.path_of("max_trials"), trials, s.path_of("num_samples"), samples,
                     sweep.num_samples);
}

status read_scheduler_knobs(const section& s, tune::sweep_config& sweep) {
  DTRAIN_RETURN_IF_ERROR(read_string(s, "scheduler", sweep.scheduler, {"fifo", "asha", "median"}));
  DTRAIN_ASSIGN_OR_RETURN(auto divisor, read_optional_int<int64_t>(s, "divisor", 2));
  DTRAIN_ASSIGN_OR_RETURN(auto factor, read_optional_int<int64_t>(s, "reduction_factor", 2));
  DTRAIN_RETURN_IF_ERROR(merge_alias(s.path_of("divisor"), divisor, s.path_of("reduction_factor"),
                                     factor, sweep.asha.reduction_factor));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "grace_period", 1, sweep.asha.grace_period));
  std::string rule = sweep.asha.keep_rule == tune::asha_options::rule::top_k ? "top_k"
                                                                             : "percentile";
  DTRAIN_RETURN_IF_ERROR(read_string(s, "rule", rule, {"top_k", "percentile"}));
  sweep.asha.keep_rule =
      rule == "top_k" ? tune::asha_options::rule::top_k : tune::asha_options::rule::percentile;
  DTRAIN_RETURN_IF_ERROR(read_int(s, "median_warmup_epochs", 0, sweep.median.warmup_epochs));
  DTRAIN_RETURN_IF_ERROR(
      read_int(s, "median_min_completed_trials", 0, sweep.median.min_completed));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "max_concurrent_trials", 0, sweep.max_concurrent_trials));
  DTRAIN_RETURN_IF_ERROR(read_double(s, "time_budget_seconds", 0, sweep.time_budget_seconds));
  if (s.find("stop_threshold")) {
    sweep.has_stop_threshold = true;
    DTRAIN_RETURN_IF_ERROR(read_double(s, "stop_threshold", -std::numeric_limits<double>::max(),
                                       sweep.stop_threshold));
  }
  return read_int(s, "max_failed_trials", -1, sweep.max_failed_trials);
}

// The metric and its direction. Determined defaults smaller_is_better to
// true, but dtrain's default metric is validation_accuracy: absent, it is
// false for an *accuracy metric and true otherwise.
status read_metric(const section& s, bool searching, tune::sweep_config& sweep) {
  DTRAIN_RETURN_IF_ERROR(read_string(s, "metric", sweep.metric));
  const auto& known = tune::known_metrics();
  if (searching && std::find(known.begin(), known.end(), sweep.metric) == known.end())
    return invalid_argument(s.path_of("metric") + ": '" + sweep.metric +
                            "' is not reported by the trainer (available: " + join(known, ", ") +
                            ")");
  bool smaller = sweep.metric.find("accuracy") == std::string::npos;
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "smaller_is_better", smaller));
  sweep.direction = smaller ? tune::mode::min : tune::mode::max;
  return status::ok();
}

// Determined's searcher section: `single` trains one trial (dtrain train);
// the others describe a sweep (dtrain tune).
status read_searcher(const YAML::Node& node, experiment& exp, std::optional<int64_t>& epochs) {
  std::vector<std::string> known = {"name", "metric", "smaller_is_better", "max_length"};
  known.insert(known.end(), search_only_keys.begin(), search_only_keys.end());
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, "searcher", known));
  std::string name = "single";
  DTRAIN_RETURN_IF_ERROR(
      read_string(s, "name", name, {"single", "grid", "random", "asha", "adaptive_asha"}));
  exp.has_search = name != "single";
  tune::sweep_config& sweep = exp.sweep;
  DTRAIN_RETURN_IF_ERROR(read_metric(s, exp.has_search, sweep));
  if (!exp.has_search) {
    for (const auto& key : search_only_keys)
      if (s.find(key))
        return invalid_argument(s.path_of(key) + ": only a searcher that searches (grid, " +
                                "random, asha) uses it, not single");
  } else {
    if (name == "adaptive_asha")
      name = "asha";  // one bracket: Determined's adaptive mode "aggressive"
    sweep.searcher = name == "grid" ? "grid" : "random";
    sweep.scheduler = name == "asha" ? "asha" : "fifo";
    DTRAIN_RETURN_IF_ERROR(read_trial_count(s, name, sweep));
    DTRAIN_RETURN_IF_ERROR(read_scheduler_knobs(s, sweep));
  }
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

// ---------------------------------------------------------------------------
// Typed hyperparameters (Determined's): a map with `type:`.

// A categorical value with its type: a quoted scalar stays text, otherwise
// an integer, a finite number, true/false, or text; a list of scalars is
// the joined text "256,128", as for a constant.
result<tune::value> typed_scalar(const std::string& path, const YAML::Node& node) {
  if (!node.IsScalar()) {
    DTRAIN_ASSIGN_OR_RETURN(std::string text, hyperparameter_text(path, node));
    return tune::value{text};
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!")  // quoted
    return tune::value{text};
  if (parse_int(path, node).is_ok())
    return tune::value{*parse_int(path, node)};
  if (auto number = parse_double(path, node))
    return tune::value{*number};
  if (text == "true" || text == "false")
    return tune::value{text == "true"};
  return tune::value{text};
}

result<std::vector<tune::value>> read_vals(const section& s) {
  DTRAIN_RETURN_IF_ERROR(require(s, "vals"));
  const YAML::Node& vals = *s.find("vals");
  const std::string path = s.path_of("vals");
  if (!vals.IsSequence() || vals.size() == 0)
    return wrong_type(path, "a non-empty list", vals);
  std::vector<tune::value> out;
  for (size_t i = 0; i < vals.size(); ++i) {
    DTRAIN_ASSIGN_OR_RETURN(tune::value v,
                            typed_scalar(path + "[" + std::to_string(i) + "]", vals[i]));
    out.push_back(std::move(v));
  }
  return out;
}

// minval, maxval and q of an int, double or log range, as numbers.
status read_range(const section& s, bool integer, tune::domain& d) {
  DTRAIN_RETURN_IF_ERROR(require(s, "minval"));
  DTRAIN_RETURN_IF_ERROR(require(s, "maxval"));
  if (integer) {
    int64_t low = 0, high = 0, q = 0;
    DTRAIN_RETURN_IF_ERROR(read_int(s, "minval", std::numeric_limits<int64_t>::min(), low));
    DTRAIN_RETURN_IF_ERROR(read_int(s, "maxval", std::numeric_limits<int64_t>::min(), high));
    DTRAIN_RETURN_IF_ERROR(read_int(s, "q", 1, q));
    d = tune::qrandint(low, high, q);
  } else {
    const double lowest = -std::numeric_limits<double>::max();
    DTRAIN_RETURN_IF_ERROR(read_double(s, "minval", lowest, d.low));
    DTRAIN_RETURN_IF_ERROR(read_double(s, "maxval", lowest, d.high));
    DTRAIN_RETURN_IF_ERROR(read_double(s, "q", 0, d.q));
    if (s.find("q") && !(d.q > 0))
      return invalid_argument(s.path_of("q") + ": must be more than 0, got " +
                              s.find("q")->Scalar());
  }
  if (d.low > d.high)
    return invalid_argument(s.path + ": minval " + s.find("minval")->Scalar() +
                            " is more than maxval " + s.find("maxval")->Scalar());
  return status::ok();
}

// Determined's log: minval and maxval are exponents of `base`; the domain
// holds the values base^minval .. base^maxval.
status read_log(const section& s, tune::domain& d) {
  double base = 10;
  DTRAIN_RETURN_IF_ERROR(read_double(s, "base", 0, base));
  if (!(base > 0) || base == 1)
    return invalid_argument(s.path_of("base") + ": must be positive and not 1");
  DTRAIN_RETURN_IF_ERROR(read_range(s, false, d));
  const double q = d.q;
  d = tune::qloguniform(std::pow(base, d.low), std::pow(base, d.high), q, base);
  if (!(d.low > 0) || !std::isfinite(d.high))
    return invalid_argument(s.path + ": " + tune::to_string(tune::value{base}) +
                            "^minval .. ^maxval is not a finite positive range");
  return status::ok();
}

// `count`: required for a range under the grid searcher, an error elsewhere.
status read_count(const section& s, const std::string& searcher, bool categorical,
                  tune::domain& d) {
  if (searcher != "grid") {
    if (s.find("count"))
      return invalid_argument(s.path_of("count") + ": count only applies to the grid searcher");
    return status::ok();
  }
  if (categorical) {
    if (s.find("count"))
      return invalid_argument(s.path_of("count") + ": a categorical's grid is its vals");
    d.grid = true;
    return status::ok();
  }
  if (!s.find("count"))
    return invalid_argument(s.path_of("count") + ": missing required key (the grid searcher " +
                            "takes count evenly spaced points of each range)");
  int count = 0;
  DTRAIN_RETURN_IF_ERROR(read_int(s, "count", 1, count));
  d = tune::grid(d, count);
  return status::ok();
}

// One typed hyperparameter: a const joins the constants, any other type the
// search space.
status read_typed(const std::string& name, const YAML::Node& node, experiment& exp) {
  const std::string path = "hyperparameters." + name;
  const std::vector<std::string> types = {"const", "int", "double", "log", "categorical"};
  std::string type;
  DTRAIN_RETURN_IF_ERROR(read_string(section{path, {{"type", node["type"]}}}, "type", type, types));
  if (type.empty())
    return invalid_argument(path + ".type: missing required key");
  const std::map<std::string, std::vector<std::string>> keys = {
      {"const", {"type", "val"}},
      {"int", {"type", "minval", "maxval", "count", "q"}},
      {"double", {"type", "minval", "maxval", "count", "q"}},
      {"log", {"type", "base", "minval", "maxval", "count", "q"}},
      {"categorical", {"type", "vals"}}};
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, path, keys.at(type)));
  if (type == "const") {
    DTRAIN_RETURN_IF_ERROR(require(s, "val"));
    DTRAIN_ASSIGN_OR_RETURN(std::string text, hyperparameter_text(s.path_of("val"), *s.find("val")));
    exp.hyperparameters[name] = std::move(text);
    return status::ok();
  }
  if (!exp.has_search)
    return invalid_argument(path + ": a " + type + " hyperparameter is searched: set " +
                            "searcher.name to grid, random or asha and run it with `dtrain tune`");
  tune::domain d;
  if (type == "categorical") {
    DTRAIN_ASSIGN_OR_RETURN(auto vals, read_vals(s));
    d = tune::choice(std::move(vals));
  } else if (type == "log") {
    DTRAIN_RETURN_IF_ERROR(read_log(s, d));
  } else {
    DTRAIN_RETURN_IF_ERROR(read_range(s, type == "int", d));
    if (type == "double")
      d = tune::quniform(d.low, d.high, d.q);
  }
  DTRAIN_RETURN_IF_ERROR(read_count(s, exp.sweep.searcher, type == "categorical", d));
  tune::space one;
  one.add(name, d);
  if (status bad = one.validate(); !bad)
    return status(bad.code(), "hyperparameters." + bad.message());
  exp.space.add(name, std::move(d));
  return status::ok();
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
    const std::string& name = entry.first.Scalar();
    const std::string key = join_path(path, name);
    if (exp.hyperparameters.count(name) || exp.space.domains().count(name))
      return invalid_argument(key + ": duplicate key");
    const YAML::Node& value = entry.second;
    if (value.IsMap() && value["type"]) {
      DTRAIN_RETURN_IF_ERROR(read_typed(name, value, exp));
      continue;
    }
    DTRAIN_ASSIGN_OR_RETURN(std::string text, hyperparameter_text(key, value));
    exp.hyperparameters.emplace(name, std::move(text));
  }
  return status::ok();
}

status read_aliased(const section& top, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(auto epochs, read_optional_int<int64_t>(top, "epochs", 1));
  std::optional<int64_t> searcher_epochs;
  if (const YAML::Node* node = top.find("searcher"))
    DTRAIN_RETURN_IF_ERROR(read_searcher(*node, exp, searcher_epochs));
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
  if (const YAML::Node* node = top.find("resources"))
    DTRAIN_RETURN_IF_ERROR(read_resources(*node, exp));
  DTRAIN_RETURN_IF_ERROR(require(top, "global_batch_size"));
  DTRAIN_RETURN_IF_ERROR(read_int(top, "global_batch_size", 1, exp.global_batch_size));
  if (const YAML::Node* node = top.find("optimizations"))
    DTRAIN_RETURN_IF_ERROR(read_optimizations(*node, exp));
  if (const YAML::Node* node = top.find("checkpoint_storage"))
    DTRAIN_RETURN_IF_ERROR(read_checkpoint_storage(*node, exp));
  // The searcher (in read_aliased) first: it decides what the typed
  // hyperparameters may be.
  DTRAIN_RETURN_IF_ERROR(read_aliased(top, exp));
  if (const YAML::Node* node = top.find("hyperparameters"))
    DTRAIN_RETURN_IF_ERROR(read_hyperparameters(*node, exp));
  DTRAIN_RETURN_IF_ERROR(check_consistency(exp));
  exp.sweep.max_epochs = exp.epochs;
  exp.sweep.seed = exp.seed;
  exp.sweep.asha.direction = exp.sweep.direction;
  exp.sweep.asha.max_t = exp.epochs;
  exp.sweep.median.direction = exp.sweep.direction;
  if (exp.has_search) {
    // The reader checked each key; this catches what crosses keys.
    if (status bad = tune::validate(exp.sweep); !bad)
      return status(bad.code(), "searcher: " + bad.message());
  }
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

// A double written so that it reads back as a double, not an integer.
std::string double_text(double x) {
  std::string text = tune::to_string(tune::value{x});
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

// The exponent e of `base` whose base^e reads back as exactly x, for
// Determined's log (nudged by an ulp or two where log10 rounds).
double exponent_of(double x, double base) {
  double e = base == 10 ? std::log10(x) : base == 2 ? std::log2(x) : std::log(x) / std::log(base);
  double up = e, down = e;
  for (int i = 0; i < 4 && std::pow(base, e) != x; ++i) {
    up = std::nextafter(up, HUGE_VAL);
    down = std::nextafter(down, -HUGE_VAL);
    if (std::pow(base, up) == x)
      e = up;
    else if (std::pow(base, down) == x)
      e = down;
  }
  return e;
}

// A categorical val: text that would read back as another type is quoted;
// text with commas is written as the list it came from.
void emit_value(YAML::Emitter& out, const tune::value& v) {
  if (const auto* text = std::get_if<std::string>(&v)) {
    auto as_plain = typed_scalar("", YAML::Node(*text));
    if (text->find(',') != std::string::npos)
      emit_hyperparameter(out, *text);
    else if (!as_plain || !std::holds_alternative<std::string>(*as_plain))
      out << YAML::DoubleQuoted << *text;
    else
      out << *text;
    return;
  }
  if (const auto* d = std::get_if<double>(&v))
    out << double_text(*d);
  else
    out << tune::to_string(v);
}

void emit_domain(YAML::Emitter& out, const tune::domain& d) {
  using kind = tune::domain::kind;
  out << YAML::Flow << YAML::BeginMap;
  switch (d.type) {
  case kind::constant:
    out << YAML::Key << "type" << YAML::Value << "const" << YAML::Key << "val" << YAML::Value;
    emit_value(out, d.constant_value);
    break;
  case kind::choice:
    out << YAML::Key << "type" << YAML::Value << "categorical" << YAML::Key << "vals"
        << YAML::Value << YAML::BeginSeq;
    for (const auto& v : d.choices)
      emit_value(out, v);
    out << YAML::EndSeq;
    break;
  case kind::integer:
    out << YAML::Key << "type" << YAML::Value << "int" << YAML::Key << "minval" << YAML::Value
        << static_cast<int64_t>(d.low) << YAML::Key << "maxval" << YAML::Value
        << static_cast<int64_t>(d.high);
    if (d.q > 0)
      out << YAML::Key << "q" << YAML::Value << static_cast<int64_t>(d.q);
    break;
  case kind::uniform:
    out << YAML::Key << "type" << YAML::Value << "double" << YAML::Key << "minval"
        << YAML::Value << double_text(d.low) << YAML::Key << "maxval" << YAML::Value
        << double_text(d.high);
    if (d.q > 0)
      out << YAML::Key << "q" << YAML::Value << double_text(d.q);
    break;
  case kind::log_uniform:
    out << YAML::Key << "type" << YAML::Value << "log" << YAML::Key << "base" << YAML::Value
        << double_text(d.base) << YAML::Key << "minval" << YAML::Value
        << double_text(exponent_of(d.low, d.base)) << YAML::Key << "maxval" << YAML::Value
        << double_text(exponent_of(d.high, d.base));
    if (d.q > 0)
      out << YAML::Key << "q" << YAML::Value << double_text(d.q);
    break;
  }
  if (d.grid && d.type != kind::choice)
    out << YAML::Key << "count" << YAML::Value << d.count;
  out << YAML::EndMap;
}

void emit_searcher(YAML::Emitter& out, const experiment& exp) {
  const tune::sweep_config& c = exp.sweep;
  out << YAML::Key << "searcher" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << searcher_name(exp);
  out << YAML::Key << "metric" << YAML::Value << c.metric;
  out << YAML::Key << "smaller_is_better" << YAML::Value << (c.direction == tune::mode::min);
  if (exp.has_search) {
    out << YAML::Key << (c.searcher == "grid" ? "num_samples" : "max_trials") << YAML::Value
        << c.num_samples;
    out << YAML::Key << "max_concurrent_trials" << YAML::Value << c.max_concurrent_trials;
    out << YAML::Key << "scheduler" << YAML::Value << c.scheduler;
    out << YAML::Key << "divisor" << YAML::Value << c.asha.reduction_factor;
    out << YAML::Key << "grace_period" << YAML::Value << c.asha.grace_period;
    out << YAML::Key << "rule" << YAML::Value
        << (c.asha.keep_rule == tune::asha_options::rule::top_k ? "top_k" : "percentile");
    out << YAML::Key << "median_warmup_epochs" << YAML::Value << c.median.warmup_epochs;
    out << YAML::Key << "median_min_completed_trials" << YAML::Value << c.median.min_completed;
    out << YAML::Key << "time_budget_seconds" << YAML::Value << double_text(c.time_budget_seconds);
    if (c.has_stop_threshold)
      out << YAML::Key << "stop_threshold" << YAML::Value << double_text(c.stop_threshold);
    out << YAML::Key << "max_failed_trials" << YAML::Value << c.max_failed_trials;
  }
  out << YAML::EndMap;
}

void emit_hyperparameters(YAML::Emitter& out, const experiment& exp) {
  out << YAML::Key << "hyperparameters" << YAML::Value;
  if (exp.hyperparameters.empty() && exp.space.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  out << YAML::BeginMap;
  for (const auto& [key, text] : exp.hyperparameters) {
    out << YAML::Key << key << YAML::Value;
    emit_hyperparameter(out, text);
  }
  for (const auto& [key, d] : exp.space.domains()) {
    out << YAML::Key << key << YAML::Value;
    emit_domain(out, d);
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

std::string searcher_name(const experiment& exp) {
  if (!exp.has_search)
    return "single";
  if (exp.sweep.searcher == "grid")
    return "grid";
  return exp.sweep.scheduler == "asha" ? "asha" : "random";
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
  emit_searcher(out, exp);
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
