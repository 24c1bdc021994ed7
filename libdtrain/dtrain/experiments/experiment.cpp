#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/data_reading.hpp"
#include "dtrain/train/file_data.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

#include "dtrain/experiments/search_reading.hpp"
#include "dtrain/experiments/yaml_reading.hpp"
#include "dtrain/zero/shard_layout.hpp"

namespace dtrain::experiments {
namespace {

using namespace detail;

// ---------------------------------------------------------------------------
// The sections of an experiment file.

status read_resources(const YAML::Node& node, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(section s,
                          open_section(node, "resources",
                                       {"slots_per_trial", "min_slots_per_trial", "cpus_per_replica", "use_gpu",
                                        "backend"}));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "slots_per_trial", 1, exp.slots_per_trial));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "min_slots_per_trial", 0, exp.min_slots_per_trial));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "cpus_per_replica", 0, exp.cpus_per_replica));
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
                                                      "gradient_compression", "precision",
                                                      "bucket_cap_mb", "zero_stage",
                                                      "clip_grad_norm"}));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "aggregation_frequency", 1, exp.aggregation_frequency));
  DTRAIN_RETURN_IF_ERROR(read_double(s, "bucket_cap_mb", 0, exp.bucket_cap_mb));
  if (!std::isfinite(exp.bucket_cap_mb))
    return invalid_argument(s.path_of("bucket_cap_mb") + ": must be a finite number of MiB, got " +
                            s.find("bucket_cap_mb")->Scalar());
  if (exp.bucket_cap_mb > 0 && exp.bucket_cap_mb * (1 << 20) < 4)
    return invalid_argument(s.path_of("bucket_cap_mb") + ": must hold one float (4 bytes), got " +
                            s.find("bucket_cap_mb")->Scalar());
  if (exp.bucket_cap_mb > 1024)
    return invalid_argument(s.path_of("bucket_cap_mb") + ": at most 1024 (MiB), got " +
                            s.find("bucket_cap_mb")->Scalar());
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "average_training_metrics", exp.average_training_metrics));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "zero_stage", 0, exp.zero_stage));
  DTRAIN_RETURN_IF_ERROR(zero::check_stage(exp.zero_stage, s.path_of("zero_stage")));
  DTRAIN_RETURN_IF_ERROR(read_double(s, "clip_grad_norm", 0, exp.clip_grad_norm));
  if (!std::isfinite(exp.clip_grad_norm))
    return invalid_argument(s.path_of("clip_grad_norm") + ": must be a finite norm, got " +
                            s.find("clip_grad_norm")->Scalar());
  // The names parse_precision() knows (tensor/precision.hpp).
  DTRAIN_RETURN_IF_ERROR(read_string(s, "precision", exp.precision,
                                     {"fp32", "tf32", "bf16", "fp16"}));
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

// Determined's min_checkpoint_period: exactly one of batches, epochs and
// (dtrain's) seconds.
status read_checkpoint_period(const YAML::Node& node, experiment& exp) {
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, "min_checkpoint_period",
                                                  {"batches", "epochs", "seconds"}));
  const int given = (s.find("batches") ? 1 : 0) + (s.find("epochs") ? 1 : 0) +
                    (s.find("seconds") ? 1 : 0);
  if (given != 1)
    return invalid_argument("min_checkpoint_period: give exactly one of batches, epochs and "
                            "seconds, got " + std::to_string(given));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "batches", 1, exp.checkpoint_every_steps));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "epochs", 1, exp.checkpoint_every_epochs));
  DTRAIN_RETURN_IF_ERROR(read_double(s, "seconds", 0, exp.checkpoint_every_seconds));
  if (s.find("seconds") && !(exp.checkpoint_every_seconds > 0 &&
                             std::isfinite(exp.checkpoint_every_seconds)))
    return invalid_argument(s.path_of("seconds") + ": must be a positive number of seconds, got " +
                            s.find("seconds")->Scalar());
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

// plugins: a list of library paths (a single path is a list of one).
status read_plugins(const YAML::Node& node, experiment& exp) {
  const std::string expected = "a list of plugin library paths";
  if (node.IsScalar() && !node.Scalar().empty()) {
    exp.plugins.push_back(node.Scalar());
    return status::ok();
  }
  if (!node.IsSequence())
    return wrong_type("plugins", expected, node);
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar() || node[i].Scalar().empty())
      return wrong_type("plugins[" + std::to_string(i) + "]", "a library path", node[i]);
    exp.plugins.push_back(node[i].Scalar());
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
  DTRAIN_RETURN_IF_ERROR(
      merge_alias("max_restarts", restarts, "max_failures", failures, exp.max_failures));
  DTRAIN_RETURN_IF_ERROR(read_string(top, "recovery", exp.recovery));
  if (exp.recovery != "live" && exp.recovery != "checkpoint")
    return invalid_argument("recovery: '" + exp.recovery +
                            "' is not one of live (the default), checkpoint");
  return status::ok();
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
                                           "max_failures", "plugins", "data", "recovery",
                                           "min_checkpoint_period"}));
  experiment exp;
  DTRAIN_RETURN_IF_ERROR(require(top, "name"));
  DTRAIN_RETURN_IF_ERROR(read_string(top, "name", exp.name));
  DTRAIN_RETURN_IF_ERROR(read_string(top, "operator", exp.operator_name));
  if (const YAML::Node* node = top.find("plugins"))
    DTRAIN_RETURN_IF_ERROR(read_plugins(*node, exp));
  if (const YAML::Node* node = top.find("resources"))
    DTRAIN_RETURN_IF_ERROR(read_resources(*node, exp));
  DTRAIN_RETURN_IF_ERROR(require(top, "global_batch_size"));
  DTRAIN_RETURN_IF_ERROR(read_int(top, "global_batch_size", 1, exp.global_batch_size));
  if (const YAML::Node* node = top.find("optimizations"))
    DTRAIN_RETURN_IF_ERROR(read_optimizations(*node, exp));
  if (const YAML::Node* node = top.find("checkpoint_storage"))
    DTRAIN_RETURN_IF_ERROR(read_checkpoint_storage(*node, exp));
  if (const YAML::Node* node = top.find("min_checkpoint_period"))
    DTRAIN_RETURN_IF_ERROR(read_checkpoint_period(*node, exp));
  // The searcher (in read_aliased) first: it decides what the typed
  // hyperparameters may be.
  DTRAIN_RETURN_IF_ERROR(read_aliased(top, exp));
  if (const YAML::Node* node = top.find("hyperparameters"))
    DTRAIN_RETURN_IF_ERROR(read_hyperparameters(*node, exp));
  if (const YAML::Node* node = top.find("data"))
    DTRAIN_RETURN_IF_ERROR(read_data_section(*node, exp));
  DTRAIN_RETURN_IF_ERROR(check_consistency(exp));
  DTRAIN_RETURN_IF_ERROR(check_pbt_mutations(exp));
  exp.sweep.max_epochs = exp.epochs;
  exp.sweep.seed = exp.seed;
  exp.sweep.asha.direction = exp.sweep.direction;
  exp.sweep.asha.max_t = exp.epochs;
  exp.sweep.median.direction = exp.sweep.direction;
  exp.sweep.hyperband.direction = exp.sweep.direction;
  exp.sweep.hyperband.study_name = exp.name;  // Optuna's study_name (hyperband.hpp)
  if (exp.has_search) {
    // The reader checked each key; this catches what crosses keys.
    if (status bad = tune::validate(exp.sweep); !bad)
      return status(bad.code(), "searcher: " + bad.message());
  }
  return exp;
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

void emit_pbt(YAML::Emitter& out, const tune::pbt_options& o) {
  out << YAML::Key << "perturbation_interval" << YAML::Value << o.perturbation_interval;
  out << YAML::Key << "burn_in" << YAML::Value << o.burn_in;
  out << YAML::Key << "quantile_fraction" << YAML::Value << double_text(o.quantile_fraction);
  out << YAML::Key << "resample_probability" << YAML::Value << double_text(o.resample_probability);
  if (!o.mutations.empty()) {
    out << YAML::Key << "mutations" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& name : o.mutations)
      out << name;
    out << YAML::EndSeq;
  }
}

// mo: the objectives, constraints and nsga2 knobs, as read_objectives,
// read_constraints and read_nsga2_knobs read them.
void emit_objectives(YAML::Emitter& out, const tune::sweep_config& c) {
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginSeq;
  for (const auto& o : c.objectives)
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << o.metric
        << YAML::Key << "mode" << YAML::Value << (o.direction == tune::mode::min ? "min" : "max")
        << YAML::EndMap;
  out << YAML::EndSeq;
}

void emit_mo_knobs(YAML::Emitter& out, const tune::sweep_config& c) {
  if (!c.constraints.empty()) {
    out << YAML::Key << "constraints" << YAML::Value << YAML::BeginSeq;
    for (const auto& k : c.constraints)
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "metric" << YAML::Value << k.metric
          << YAML::Key << "max" << YAML::Value << double_text(k.bound) << YAML::EndMap;
    out << YAML::EndSeq;
  }
  if (c.searcher != "nsga2")
    return;
  out << YAML::Key << "population_size" << YAML::Value << c.nsga2_population_size;
  if (c.nsga2_mutation_prob >= 0)
    out << YAML::Key << "mutation_prob" << YAML::Value << double_text(c.nsga2_mutation_prob);
  out << YAML::Key << "crossover_prob" << YAML::Value << double_text(c.nsga2_crossover_prob);
  out << YAML::Key << "swapping_prob" << YAML::Value << double_text(c.nsga2_swapping_prob);
}

// ASHA's knobs, or hyperband's in their place (they share the key names).
void emit_rungs(YAML::Emitter& out, const tune::sweep_config& c) {
  if (c.scheduler != "hyperband") {
    out << YAML::Key << "divisor" << YAML::Value << c.asha.reduction_factor;
    out << YAML::Key << "grace_period" << YAML::Value << c.asha.grace_period;
    out << YAML::Key << "rule" << YAML::Value
        << (c.asha.keep_rule == tune::asha_options::rule::top_k ? "top_k" : "percentile");
    return;
  }
  const tune::hyperband_options& o = c.hyperband;
  out << YAML::Key << "divisor" << YAML::Value << o.reduction_factor;
  out << YAML::Key << "grace_period" << YAML::Value << o.min_resource;
  if (o.max_resource == tune::hyperband_options::auto_max_resource)
    out << YAML::Key << "max_resource" << YAML::Value << "auto";
  else if (o.max_resource > 0)  // 0: the experiment's epochs, left unwritten
    out << YAML::Key << "max_resource" << YAML::Value << o.max_resource;
}

void emit_searcher(YAML::Emitter& out, const experiment& exp) {
  const tune::sweep_config& c = exp.sweep;
  out << YAML::Key << "searcher" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << searcher_name(exp);
  if (!c.objectives.empty())
    emit_objectives(out, c);
  else {
    out << YAML::Key << "metric" << YAML::Value << c.metric;
    out << YAML::Key << "smaller_is_better" << YAML::Value << (c.direction == tune::mode::min);
  }
  if (exp.has_search) {
    out << YAML::Key << (c.searcher == "grid" ? "num_samples" : "max_trials") << YAML::Value
        << c.num_samples;
    out << YAML::Key << "max_concurrent_trials" << YAML::Value << c.max_concurrent_trials;
    if (c.searcher == "tpe") {
      out << YAML::Key << "startup_trials" << YAML::Value << c.tpe_startup_trials;
      out << YAML::Key << "ei_candidates" << YAML::Value << c.tpe_ei_candidates;
      // Written only when set, so the canonical text (and config_hash) of
      // experiments stored before these knobs existed does not move.
      for (const auto& [key, on] : {std::pair<const char*, bool>{"multivariate", c.tpe_multivariate},
                                    {"group", c.tpe_group},
                                    {"constant_liar", c.tpe_constant_liar}})
        if (on)
          out << YAML::Key << key << YAML::Value << true;
    }
    emit_mo_knobs(out, c);
    out << YAML::Key << "scheduler" << YAML::Value << c.scheduler;
    emit_rungs(out, c);
    out << YAML::Key << "median_warmup_epochs" << YAML::Value << c.median.warmup_epochs;
    out << YAML::Key << "median_min_completed_trials" << YAML::Value << c.median.min_completed;
    if (c.scheduler == "pbt")
      emit_pbt(out, c.pbt);
    out << YAML::Key << "time_budget_seconds" << YAML::Value << double_text(c.time_budget_seconds);
    if (c.has_stop_threshold)
      out << YAML::Key << "stop_threshold" << YAML::Value << double_text(c.stop_threshold);
    out << YAML::Key << "max_failed_trials" << YAML::Value << c.max_failed_trials;
  }
  out << YAML::EndMap;
}

// The data.* keys go back into a data: section when they form a valid one
// (else, as any odd key, they stay among the hyperparameters): data.A.B: V
// is written as data: {A: {B: V}}, which reads back to the same keys.
bool writes_data_section(const experiment& exp) {
  const train::hyperparameters hp(exp.hyperparameters);
  return train::has_file_data(hp) && train::check_file_data(hp).is_ok();
}

struct key_tree {
  std::string text;  // a leaf's value
  std::map<std::string, key_tree> children;
};

void emit_tree(YAML::Emitter& out, const key_tree& node) {
  if (node.children.empty()) {
    emit_hyperparameter(out, node.text);
    return;
  }
  out << YAML::BeginMap;
  for (const auto& [name, child] : node.children) {
    out << YAML::Key << name << YAML::Value;
    emit_tree(out, child);
  }
  out << YAML::EndMap;
}

void emit_data(YAML::Emitter& out, const experiment& exp) {
  if (!writes_data_section(exp))
    return;
  key_tree root;
  for (const auto& [key, text] : exp.hyperparameters) {
    if (key.rfind("data.", 0) != 0)
      continue;
    key_tree* node = &root;
    for (size_t start = 5;;) {
      const size_t dot = key.find('.', start);
      node = &node->children[key.substr(start, dot == std::string::npos ? dot : dot - start)];
      if (dot == std::string::npos)
        break;
      start = dot + 1;
    }
    node->text = text;
  }
  out << YAML::Key << "data" << YAML::Value;
  emit_tree(out, root);
}

void emit_hyperparameters(YAML::Emitter& out, const experiment& exp) {
  out << YAML::Key << "hyperparameters" << YAML::Value;
  const bool data_apart = writes_data_section(exp);
  auto listed = [&](const std::string& key) { return !data_apart || key.rfind("data.", 0) != 0; };
  const bool any = std::any_of(exp.hyperparameters.begin(), exp.hyperparameters.end(),
                               [&](const auto& kv) { return listed(kv.first); });
  if (!any && exp.space.empty()) {
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
    return;
  }
  out << YAML::BeginMap;
  for (const auto& [key, text] : exp.hyperparameters) {
    if (!listed(key))
      continue;
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
  DTRAIN_ASSIGN_OR_RETURN(experiment exp, parse_experiment(text, path));
  const std::string dir = parent_of(path);
  for (auto& plugin : exp.plugins)
    if (plugin.front() != '/' && dir != ".")
      plugin = dir + "/" + plugin;
  // Absolute now: the experiment's checkpoint directory is stored with it
  // and later removed by `dtrain experiments delete`, from any directory.
  if (!exp.checkpoint_dir.empty() && exp.checkpoint_dir.front() != '/') {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::absolute(dir, ec);
    if (ec)
      return io_error(path + ": checkpoint_storage.host_path " + exp.checkpoint_dir +
                      ": cannot resolve it against the file's directory: " + ec.message());
    exp.checkpoint_dir = (base / exp.checkpoint_dir).lexically_normal().string();
  }
  return exp;
}

std::string searcher_name(const experiment& exp) {
  if (!exp.has_search)
    return "single";
  if (exp.sweep.searcher == "grid" || exp.sweep.searcher == "tpe" || exp.sweep.searcher == "nsga2")
    return exp.sweep.searcher;
  return exp.sweep.scheduler == "asha" ? "asha" : "random";
}

// Only when set, so that an experiment that never named it keeps its hash.
void emit_checkpoint_period(YAML::Emitter& out, const experiment& exp) {
  if (exp.checkpoint_every_steps <= 0 && exp.checkpoint_every_epochs <= 0 &&
      exp.checkpoint_every_seconds <= 0)
    return;
  out << YAML::Key << "min_checkpoint_period" << YAML::Value << YAML::BeginMap;
  if (exp.checkpoint_every_steps > 0)
    out << YAML::Key << "batches" << YAML::Value << exp.checkpoint_every_steps;
  else if (exp.checkpoint_every_epochs > 0)
    out << YAML::Key << "epochs" << YAML::Value << exp.checkpoint_every_epochs;
  else
    out << YAML::Key << "seconds" << YAML::Value << double_text(exp.checkpoint_every_seconds);
  out << YAML::EndMap;
}

std::string to_yaml(const experiment& exp) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << exp.name;
  out << YAML::Key << "operator" << YAML::Value << exp.operator_name;
  emit_hyperparameters(out, exp);
  emit_data(out, exp);
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap
      << YAML::Key << "slots_per_trial" << YAML::Value << exp.slots_per_trial
      << YAML::Key << "min_slots_per_trial" << YAML::Value << exp.min_slots_per_trial;
  // Only when set: an experiment written before the key existed keeps its hash.
  if (exp.cpus_per_replica > 0)
    out << YAML::Key << "cpus_per_replica" << YAML::Value << exp.cpus_per_replica;
  out << YAML::Key << "use_gpu" << YAML::Value << exp.use_gpu
      << YAML::Key << "backend" << YAML::Value << exp.backend << YAML::EndMap;
  out << YAML::Key << "global_batch_size" << YAML::Value << exp.global_batch_size;
  out << YAML::Key << "epochs" << YAML::Value << exp.epochs;
  emit_searcher(out, exp);
  out << YAML::Key << "optimizations" << YAML::Value << YAML::BeginMap
      << YAML::Key << "aggregation_frequency" << YAML::Value << exp.aggregation_frequency
      << YAML::Key << "average_training_metrics" << YAML::Value << exp.average_training_metrics
      << YAML::Key << "gradient_compression" << YAML::Value << exp.gradient_compression;
  // Written only when not the default, so that the canonical YAML (and the
  // hash) of an experiment that never named it stays what it was.
  if (exp.precision != "fp32")
    out << YAML::Key << "precision" << YAML::Value << exp.precision;
  if (exp.bucket_cap_mb > 0)
    out << YAML::Key << "bucket_cap_mb" << YAML::Value << exp.bucket_cap_mb;
  if (exp.zero_stage > 0)
    out << YAML::Key << "zero_stage" << YAML::Value << exp.zero_stage;
  if (exp.clip_grad_norm > 0)
    out << YAML::Key << "clip_grad_norm" << YAML::Value << exp.clip_grad_norm;
  out << YAML::EndMap;
  out << YAML::Key << "checkpoint_storage" << YAML::Value << YAML::BeginMap;
  if (!exp.checkpoint_dir.empty())
    out << YAML::Key << "host_path" << YAML::Value << exp.checkpoint_dir;
  out << YAML::Key << "save_trial_latest" << YAML::Value << exp.checkpoint_keep << YAML::EndMap;
  emit_checkpoint_period(out, exp);
  out << YAML::Key << "seed" << YAML::Value << exp.seed;
  out << YAML::Key << "max_restarts" << YAML::Value << exp.max_failures;
  if (exp.recovery != "live")  // the default is not written: the hash stays
    out << YAML::Key << "recovery" << YAML::Value << exp.recovery;
  if (!exp.plugins.empty()) {
    out << YAML::Key << "plugins" << YAML::Value << YAML::BeginSeq;
    for (const auto& plugin : exp.plugins)
      out << plugin;
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  DTRAIN_CHECK(out.good(), out.GetLastError().c_str());
  return std::string(out.c_str()) + "\n";
}

} // namespace dtrain::experiments
