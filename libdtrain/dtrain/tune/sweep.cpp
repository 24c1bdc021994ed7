#include "dtrain/tune/sweep.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "dtrain/core/check.hpp"
#include "dtrain/tune/nsga2.hpp"
#include "dtrain/tune/tpe.hpp"

namespace dtrain::tune {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

status at_least(const std::string& field, int64_t value, int64_t min) {
  if (value >= min)
    return status::ok();
  return invalid_argument(field + ": must be at least " + std::to_string(min) + ", got " +
                          std::to_string(value));
}

status one_of(const std::string& field, const std::string& value,
              const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end())
    return status::ok();
  return invalid_argument(field + ": expected one of " + join(choices) + ", got '" + value + "'");
}

// The PBT knobs that do not depend on the space (make_pbt checks the
// mutations against it).
status validate_pbt(const pbt_options& o) {
  DTRAIN_RETURN_IF_ERROR(at_least("pbt.perturbation_interval", o.perturbation_interval, 1));
  DTRAIN_RETURN_IF_ERROR(at_least("pbt.burn_in", o.burn_in, 0));
  if (!(o.quantile_fraction >= 0 && o.quantile_fraction <= 0.5))
    return invalid_argument("pbt.quantile_fraction: must be in [0, 0.5], got " +
                            to_string(value{o.quantile_fraction}));
  if (!(o.resample_probability >= 0 && o.resample_probability <= 1))
    return invalid_argument("pbt.resample_probability: must be in [0, 1], got " +
                            to_string(value{o.resample_probability}));
  return status::ok();
}

nsga2_options nsga2_of(const sweep_config& c) {
  nsga2_options o;
  o.objectives = objectives_of(c);
  o.constraints = c.constraints;
  o.num_samples = c.num_samples;
  o.population_size = c.nsga2_population_size;
  o.mutation_prob = c.nsga2_mutation_prob;
  o.crossover_prob = c.nsga2_crossover_prob;
  o.swapping_prob = c.nsga2_swapping_prob;
  o.seed = c.seed;
  return o;
}

// The objectives and constraints: known metrics, no objective twice, the
// first objective as `metric`, and what a multi-objective sweep cannot
// use (a scheduler that stops on one metric, a stop threshold).
status validate_objectives(const sweep_config& c) {
  for (size_t i = 0; i < c.objectives.size(); ++i) {
    const std::string field = "metrics[" + std::to_string(i) + "]";
    DTRAIN_RETURN_IF_ERROR(check_metric(c.objectives[i].metric).with_context(field));
    for (size_t j = 0; j < i; ++j)
      if (c.objectives[j].metric == c.objectives[i].metric)
        return invalid_argument(field + ": '" + c.objectives[i].metric + "' is already metrics[" +
                                std::to_string(j) + "]");
  }
  if (!c.objectives.empty() &&
      (c.objectives[0].metric != c.metric || c.objectives[0].direction != c.direction))
    return invalid_argument("metric: must be the first of metrics ('" + c.objectives[0].metric +
                            "' with its direction), got '" + c.metric + "'");
  for (size_t i = 0; i < c.constraints.size(); ++i) {
    const std::string field = "constraints[" + std::to_string(i) + "]";
    DTRAIN_RETURN_IF_ERROR(check_metric(c.constraints[i].metric).with_context(field + ".metric"));
    if (!std::isfinite(c.constraints[i].bound))
      return invalid_argument(field + ".max: must be finite, got " +
                              to_string(value{c.constraints[i].bound}));
  }
  if (!multi_objective(c))
    return status::ok();
  const std::string what = "a multi-objective sweep (" + std::to_string(c.objectives.size()) +
                           " metrics)";
  if (c.scheduler != "fifo")
    return invalid_argument("scheduler: " + c.scheduler + " stops trials on one metric; " + what +
                            " runs every trial to its end (scheduler fifo)");
  if (c.has_stop_threshold)
    return invalid_argument("stop_threshold: " + what + " has no single metric to stop on");
  return status::ok();
}

} // namespace

std::vector<objective> objectives_of(const sweep_config& c) {
  if (!c.objectives.empty())
    return c.objectives;
  return {objective{c.metric, c.direction}};
}

bool multi_objective(const sweep_config& c) { return c.objectives.size() > 1; }

const std::vector<std::string>& known_metrics() {
  // What the trainer reports after each epoch: the training loss and
  // accuracy of the epoch, and the same on the validation set.
  static const std::vector<std::string> names = {"loss", "accuracy", "validation_loss",
                                                 "validation_accuracy"};
  return names;
}

status check_metric(const std::string& metric) {
  const auto& known = known_metrics();
  if (std::find(known.begin(), known.end(), metric) != known.end())
    return status::ok();
  bool well_formed = !metric.empty();
  for (char c : metric)
    well_formed = well_formed && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (well_formed)
    return status::ok();
  return invalid_argument("'" + metric + "' is not a metric the trainer reports (built-in: " +
                          join(known) + "; an operator's own: NAME or validation_NAME, " +
                          "letters, digits and '_')");
}

status validate(const sweep_config& c) {
  DTRAIN_RETURN_IF_ERROR(check_metric(c.metric).with_context("metric"));
  DTRAIN_RETURN_IF_ERROR(one_of("searcher", c.searcher, {"random", "grid", "tpe", "nsga2"}));
  DTRAIN_RETURN_IF_ERROR(
      one_of("scheduler", c.scheduler, {"fifo", "asha", "median", "pbt", "hyperband"}));
  DTRAIN_RETURN_IF_ERROR(at_least("num_samples", c.num_samples, 1));
  DTRAIN_RETURN_IF_ERROR(at_least("max_epochs", c.max_epochs, 1));
  DTRAIN_RETURN_IF_ERROR(at_least("max_concurrent_trials", c.max_concurrent_trials, 0));
  DTRAIN_RETURN_IF_ERROR(at_least("asha.grace_period", c.asha.grace_period, 1));
  DTRAIN_RETURN_IF_ERROR(at_least("asha.reduction_factor", c.asha.reduction_factor, 2));
  DTRAIN_RETURN_IF_ERROR(at_least("median.warmup_epochs", c.median.warmup_epochs, 0));
  DTRAIN_RETURN_IF_ERROR(at_least("median.min_completed", c.median.min_completed, 0));
  DTRAIN_RETURN_IF_ERROR(validate_pbt(c.pbt));
  DTRAIN_RETURN_IF_ERROR(c.scheduler == "hyperband" ? check_hyperband(c.hyperband, c.max_epochs)
                                                     : status::ok());
  DTRAIN_RETURN_IF_ERROR(at_least("tpe_startup_trials", c.tpe_startup_trials, 1));
  DTRAIN_RETURN_IF_ERROR(at_least("tpe_ei_candidates", c.tpe_ei_candidates, 1));
  if (c.tpe_group && !c.tpe_multivariate)
    return invalid_argument("tpe_group: splits the multivariate estimator; needs tpe_multivariate");
  DTRAIN_RETURN_IF_ERROR(validate_objectives(c));
  if (c.searcher == "nsga2")
    DTRAIN_RETURN_IF_ERROR(validate(nsga2_of(c)));
  if (!(c.time_budget_seconds >= 0) || std::isinf(c.time_budget_seconds))
    return invalid_argument("time_budget_seconds: must be a finite number of at least 0, got " +
                            to_string(value{c.time_budget_seconds}));
  if (c.has_stop_threshold && !std::isfinite(c.stop_threshold))
    return invalid_argument("stop_threshold: must be finite, got " +
                            to_string(value{c.stop_threshold}));
  return at_least("max_failed_trials", c.max_failed_trials, -1);
}

std::unique_ptr<searcher> make_searcher(const space& s, const sweep_config& c) {
  if (c.searcher == "tpe") {
    tpe_options o;
    o.metric = c.metric;
    o.direction = c.direction;
    o.num_samples = c.num_samples;
    o.startup_trials = c.tpe_startup_trials;
    o.ei_candidates = c.tpe_ei_candidates;
    o.multivariate = c.tpe_multivariate;
    o.group = c.tpe_group;
    o.constant_liar = c.tpe_constant_liar;
    if (multi_objective(c))
      o.objectives = c.objectives;
    o.constraints = c.constraints;
    o.seed = c.seed;
    return make_tpe(s, o);
  }
  if (c.searcher == "nsga2")
    return make_nsga2(s, nsga2_of(c));
  // random and grid are both Ray's variant generator: "grid" spaces carry grid
  // dimensions (enumerated, repeated num_samples times), "random" ones
  // only random dimensions (num_samples draws).
  return make_variant_searcher(s, c.num_samples, c.seed);
}

std::vector<std::unique_ptr<stopper>> make_stoppers(const sweep_config& c) {
  std::vector<std::unique_ptr<stopper>> out;
  out.push_back(make_max_epochs(c.max_epochs));
  if (c.time_budget_seconds > 0)
    out.push_back(make_time_budget(c.time_budget_seconds));
  if (c.has_stop_threshold)
    out.push_back(make_metric_threshold(c.metric, c.stop_threshold, c.direction));
  return out;
}

} // namespace dtrain::tune
