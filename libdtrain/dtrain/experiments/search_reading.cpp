// The searcher section and typed hyperparameters (search_reading.hpp).
#include "dtrain/experiments/search_reading.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "dtrain/experiments/yaml_reading.hpp"
#include "dtrain/tune/sweep.hpp"

namespace dtrain::experiments::detail {

namespace {

// The searcher section, Determined's keys and dtrain's extras.
const std::vector<std::string> search_only_keys = {
    "max_trials", "num_samples", "max_concurrent_trials", "scheduler", "divisor",
    "reduction_factor", "grace_period", "rule", "median_warmup_epochs",
    "median_min_completed_trials", "time_budget_seconds", "stop_threshold", "max_failed_trials",
    "startup_trials", "ei_candidates", "multivariate", "group", "constant_liar"};

// The pbt scheduler's knobs (read_pbt_knobs); only `scheduler: pbt` takes them.
const std::vector<std::string> pbt_keys = {"perturbation_interval", "burn_in", "quantile_fraction",
                                           "resample_probability", "mutations"};

// mo: the nsga2 searcher's knobs (read_nsga2_knobs) and the constraints.
const std::vector<std::string> nsga2_keys = {"population_size", "mutation_prob", "crossover_prob",
                                             "swapping_prob"};
// The hyperband scheduler's own keys (read_hyperband_knobs); it also takes
// grace_period and divisor / reduction_factor, as asha does.
const std::vector<std::string> hyperband_keys = {"min_resource", "max_resource"};

// Every key of a searching searcher.
std::vector<std::string> searching_keys() {
  std::vector<std::string> out = search_only_keys;
  out.insert(out.end(), pbt_keys.begin(), pbt_keys.end());
  out.insert(out.end(), nsga2_keys.begin(), nsga2_keys.end());
  out.push_back("constraints");
  out.insert(out.end(), hyperband_keys.begin(), hyperband_keys.end());
  return out;
}

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

// `mutations`: a list of distinct hyperparameter names (checked against
// the space by check_pbt_mutations, once the hyperparameters are read).
status read_mutations(const section& s, std::vector<std::string>& out) {
  const YAML::Node* node = s.find("mutations");
  if (!node)
    return status::ok();
  const std::string path = s.path_of("mutations");
  if (!node->IsSequence() || node->size() == 0)
    return wrong_type(path, "a non-empty list of hyperparameter names", *node);
  for (size_t i = 0; i < node->size(); ++i) {
    const YAML::Node& item = (*node)[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!item.IsScalar() || item.Scalar().empty())
      return wrong_type(at, "a hyperparameter name", item);
    if (std::find(out.begin(), out.end(), item.Scalar()) != out.end())
      return invalid_argument(at + ": '" + item.Scalar() + "' is listed twice");
    out.push_back(item.Scalar());
  }
  return status::ok();
}

// A fraction in [0, max], the error naming the key.
status read_fraction(const section& s, const std::string& key, double max, double& out) {
  DTRAIN_RETURN_IF_ERROR(read_double(s, key, 0, out));
  if (out > max)
    return invalid_argument(s.path_of(key) + ": must be at most " +
                            tune::to_string(tune::value{max}) + ", got " + s.find(key)->Scalar());
  return status::ok();
}

status read_pbt_knobs(const section& s, tune::sweep_config& sweep) {
  if (sweep.scheduler != "pbt") {
    for (const auto& key : pbt_keys)
      if (s.find(key))
        return invalid_argument(s.path_of(key) + ": only scheduler: pbt uses it (the scheduler is " +
                                sweep.scheduler + ")");
    return status::ok();
  }
  tune::pbt_options& o = sweep.pbt;
  DTRAIN_RETURN_IF_ERROR(read_int(s, "perturbation_interval", 1, o.perturbation_interval));
  DTRAIN_RETURN_IF_ERROR(read_int(s, "burn_in", 0, o.burn_in));
  DTRAIN_RETURN_IF_ERROR(read_fraction(s, "quantile_fraction", 0.5, o.quantile_fraction));
  DTRAIN_RETURN_IF_ERROR(read_fraction(s, "resample_probability", 1, o.resample_probability));
  return read_mutations(s, o.mutations);
}

// max_resource: an integer of at least 1, or auto (Optuna's "auto").
status read_max_resource(const section& s, int64_t& out) {
  const YAML::Node* node = s.find("max_resource");
  if (node && node->IsScalar() && node->Scalar() == "auto") {
    out = tune::hyperband_options::auto_max_resource;
    return status::ok();
  }
  if (node && !parse_int(s.path_of("max_resource"), *node).is_ok())
    return wrong_type(s.path_of("max_resource"), "an integer or auto", *node);
  return read_int(s, "max_resource", 1, out);
}

// Under scheduler: hyperband, grace_period (alias min_resource), divisor
// (alias reduction_factor) and max_resource go to sweep.hyperband; rule is
// asha's only. Elsewhere min_resource and max_resource are errors.
status read_hyperband_knobs(const section& s, tune::sweep_config& sweep) {
  if (sweep.scheduler != "hyperband") {
    for (const auto& key : hyperband_keys)
      if (s.find(key))
        return invalid_argument(s.path_of(key) + ": only scheduler: hyperband uses it (the " +
                                "scheduler is " + sweep.scheduler + ")");
    return status::ok();
  }
  if (s.find("rule"))
    return invalid_argument(s.path_of("rule") + ": only scheduler: asha uses it (hyperband " +
                            "keeps Optuna's top-k rule in each bracket)");
  tune::hyperband_options& o = sweep.hyperband;
  DTRAIN_ASSIGN_OR_RETURN(auto divisor, read_optional_int<int64_t>(s, "divisor", 2));
  DTRAIN_ASSIGN_OR_RETURN(auto factor, read_optional_int<int64_t>(s, "reduction_factor", 2));
  DTRAIN_RETURN_IF_ERROR(merge_alias(s.path_of("divisor"), divisor, s.path_of("reduction_factor"),
                                     factor, o.reduction_factor));
  DTRAIN_ASSIGN_OR_RETURN(auto grace, read_optional_int<int64_t>(s, "grace_period", 1));
  DTRAIN_ASSIGN_OR_RETURN(auto least, read_optional_int<int64_t>(s, "min_resource", 1));
  DTRAIN_RETURN_IF_ERROR(merge_alias(s.path_of("grace_period"), grace, s.path_of("min_resource"),
                                     least, o.min_resource));
  return read_max_resource(s, o.max_resource);
}

// ASHA's knobs (hyperband reads the shared ones itself).
status read_asha_knobs(const section& s, tune::sweep_config& sweep) {
  if (sweep.scheduler == "hyperband")
    return status::ok();
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
  return status::ok();
}

status read_scheduler_knobs(const section& s, tune::sweep_config& sweep) {
  DTRAIN_RETURN_IF_ERROR(read_string(s, "scheduler", sweep.scheduler,
                                     {"fifo", "asha", "median", "pbt", "hyperband"}));
  DTRAIN_RETURN_IF_ERROR(read_pbt_knobs(s, sweep));
  DTRAIN_RETURN_IF_ERROR(read_hyperband_knobs(s, sweep));
  DTRAIN_RETURN_IF_ERROR(read_asha_knobs(s, sweep));
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

// The TPE searcher's knobs (Optuna's n_startup_trials, n_ei_candidates,
// multivariate, group, constant_liar); an error under any other searcher.
status read_tpe_knobs(const section& s, const std::string& name, tune::sweep_config& sweep) {
  for (const std::string key :
       {"startup_trials", "ei_candidates", "multivariate", "group", "constant_liar"})
    if (name != "tpe" && s.find(key))
      return invalid_argument(s.path_of(key) + ": only the tpe searcher uses it, not " + name);
  DTRAIN_RETURN_IF_ERROR(read_int(s, "startup_trials", 1, sweep.tpe_startup_trials));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "multivariate", sweep.tpe_multivariate));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "group", sweep.tpe_group));
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "constant_liar", sweep.tpe_constant_liar));
  if (sweep.tpe_group && !sweep.tpe_multivariate)
    return invalid_argument(s.path_of("group") +
                            ": group splits the multivariate estimator; it needs multivariate: true");
  return read_int(s, "ei_candidates", 1, sweep.tpe_ei_candidates);
}

// The metric and its direction. Determined defaults smaller_is_better to
// true, but dtrain's default metric is validation_accuracy: absent, it is
// false for an *accuracy metric and true otherwise.
status read_metric(const section& s, bool searching, tune::sweep_config& sweep) {
  DTRAIN_RETURN_IF_ERROR(read_string(s, "metric", sweep.metric));
  if (searching)
    DTRAIN_RETURN_IF_ERROR(tune::check_metric(sweep.metric).with_context(s.path_of("metric")));
  bool smaller = sweep.metric.find("accuracy") == std::string::npos;
  DTRAIN_RETURN_IF_ERROR(read_bool(s, "smaller_is_better", smaller));
  sweep.direction = smaller ? tune::mode::min : tune::mode::max;
  return status::ok();
}

// mo: `metrics:`, the objectives of a multi-objective sweep, each a name
// or {name: NAME, mode: min|max} (mode absent: max for an *accuracy
// metric, min otherwise, as for `metric`). The first becomes the sweep's
// metric. Not with `metric` or `smaller_is_better`.
status read_objectives(const section& s, bool searching, tune::sweep_config& sweep) {
  const YAML::Node* node = s.find("metrics");
  if (!node)
    return status::ok();
  const std::string path = s.path_of("metrics");
  for (const std::string key : {"metric", "smaller_is_better"})
    if (s.find(key))
      return invalid_argument(path + ": give either metric (one objective) or metrics (each " +
                              "with its mode), not both (" + s.path_of(key) + " is set)");
  if (!node->IsSequence() || node->size() == 0)
    return wrong_type(path, "a non-empty list of metrics ({name: NAME, mode: min|max})", *node);
  for (size_t i = 0; i < node->size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    std::string name, mode;
    if ((*node)[i].IsScalar()) {
      name = (*node)[i].Scalar();
    } else {
      DTRAIN_ASSIGN_OR_RETURN(section m, open_section((*node)[i], at, {"name", "mode"}));
      DTRAIN_RETURN_IF_ERROR(require(m, "name"));
      DTRAIN_RETURN_IF_ERROR(read_string(m, "name", name));
      DTRAIN_RETURN_IF_ERROR(read_string(m, "mode", mode, {"min", "max"}));
    }
    if (searching)
      DTRAIN_RETURN_IF_ERROR(tune::check_metric(name).with_context(at));
    if (mode.empty())
      mode = name.find("accuracy") == std::string::npos ? "min" : "max";
    sweep.objectives.push_back({name, mode == "min" ? tune::mode::min : tune::mode::max});
  }
  sweep.metric = sweep.objectives[0].metric;
  sweep.direction = sweep.objectives[0].direction;
  return status::ok();
}

// mo: `constraints:`, a list of {metric: NAME, max: BOUND}: the metric
// must stay <= BOUND (a feasible-first rule for nsga2 and the Pareto set).
status read_constraints(const section& s, tune::sweep_config& sweep) {
  const YAML::Node* node = s.find("constraints");
  if (!node)
    return status::ok();
  const std::string path = s.path_of("constraints");
  if (!node->IsSequence() || node->size() == 0)
    return wrong_type(path, "a non-empty list of {metric: NAME, max: BOUND}", *node);
  for (size_t i = 0; i < node->size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    DTRAIN_ASSIGN_OR_RETURN(section c, open_section((*node)[i], at, {"metric", "max"}));
    DTRAIN_RETURN_IF_ERROR(require(c, "metric"));
    DTRAIN_RETURN_IF_ERROR(require(c, "max"));
    tune::constraint out;
    DTRAIN_RETURN_IF_ERROR(read_string(c, "metric", out.metric));
    DTRAIN_RETURN_IF_ERROR(tune::check_metric(out.metric).with_context(c.path_of("metric")));
    DTRAIN_RETURN_IF_ERROR(read_double(c, "max", -HUGE_VAL, out.bound));
    sweep.constraints.push_back(out);
  }
  return status::ok();
}

// mo: the nsga2 searcher's knobs (Optuna's NSGAIISampler arguments); an
// error under any other searcher.
status read_nsga2_knobs(const section& s, const std::string& name, tune::sweep_config& sweep) {
  for (const auto& key : nsga2_keys)
    if (name != "nsga2" && s.find(key))
      return invalid_argument(s.path_of(key) + ": only the nsga2 searcher uses it, not " + name);
  DTRAIN_RETURN_IF_ERROR(read_int(s, "population_size", 2, sweep.nsga2_population_size));
  DTRAIN_RETURN_IF_ERROR(read_fraction(s, "mutation_prob", 1, sweep.nsga2_mutation_prob));
  DTRAIN_RETURN_IF_ERROR(read_fraction(s, "crossover_prob", 1, sweep.nsga2_crossover_prob));
  return read_fraction(s, "swapping_prob", 1, sweep.nsga2_swapping_prob);
}

} // namespace

// Determined's searcher section: `single` trains one trial (dtrain train);
// the others describe a sweep (dtrain tune).
status read_searcher(const YAML::Node& node, experiment& exp, std::optional<int64_t>& epochs) {
  std::vector<std::string> known = {"name", "metric", "metrics", "smaller_is_better", "max_length"};
  const std::vector<std::string> searching = searching_keys();
  known.insert(known.end(), searching.begin(), searching.end());
  DTRAIN_ASSIGN_OR_RETURN(section s, open_section(node, "searcher", known));
  std::string name = "single";
  DTRAIN_RETURN_IF_ERROR(
      read_string(s, "name", name, {"single", "grid", "random", "asha", "adaptive_asha", "tpe", "nsga2"}));
  exp.has_search = name != "single";
  tune::sweep_config& sweep = exp.sweep;
  DTRAIN_RETURN_IF_ERROR(read_metric(s, exp.has_search, sweep));
  DTRAIN_RETURN_IF_ERROR(read_objectives(s, exp.has_search, sweep));
  if (!exp.has_search) {
    for (const auto& key : searching)
      if (s.find(key))
        return invalid_argument(s.path_of(key) + ": only a searcher that searches (grid, " +
                                "random, asha) uses it, not single");
  } else {
    if (name == "adaptive_asha")
      name = "asha";  // one bracket: Determined's adaptive mode "aggressive"
    sweep.searcher = name == "grid" || name == "tpe" || name == "nsga2" ? name : "random";
    sweep.scheduler = name == "asha" ? "asha" : "fifo";
    DTRAIN_RETURN_IF_ERROR(read_trial_count(s, name, sweep));
    DTRAIN_RETURN_IF_ERROR(read_tpe_knobs(s, name, sweep));
    DTRAIN_RETURN_IF_ERROR(read_nsga2_knobs(s, name, sweep));
    DTRAIN_RETURN_IF_ERROR(read_constraints(s, sweep));
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

status check_pbt_mutations(const experiment& exp) {
  if (!exp.has_search || exp.sweep.scheduler != "pbt")
    return status::ok();
  const auto& mutations = exp.sweep.pbt.mutations;
  for (size_t i = 0; i < mutations.size(); ++i) {
    auto it = exp.space.domains().find(mutations[i]);
    if (it == exp.space.domains().end() || it->second.type == tune::domain::kind::constant)
      return invalid_argument("searcher.mutations[" + std::to_string(i) + "]: '" + mutations[i] +
                              "' is not a searched hyperparameter (searched: " +
                              join(exp.space.varying(), ", ") + ")");
  }
  if (exp.space.varying().empty())
    return invalid_argument("searcher.scheduler: pbt needs a searched hyperparameter to mutate");
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

namespace {

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

} // namespace

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

} // namespace dtrain::experiments::detail
