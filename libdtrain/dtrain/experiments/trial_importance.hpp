#pragma once

#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/importance.hpp"

namespace dtrain::experiments {

/// Hyperparameter importance of a stored sweep: what `dtrain experiments
/// importance`, `dtrain report` and the dashboard show.
struct experiment_importance {
  tune::importance_method method = tune::importance_method::fanova;
  std::string metric;        // the experiment's metric, whose last values were assessed
  size_t trials_used = 0;    // completed trials with a finite value
  size_t trials_total = 0;   // every trial of the experiment
  std::vector<tune::parameter_importance> parameters;  // most important first
};

/// Importance of experiment `e`'s hyperparameters from its trials: the
/// search space is read from the experiment's stored configuration, and
/// each completed trial (end_how "completed": Optuna's COMPLETE; stopped,
/// failed, running and interrupted trials are left out) contributes its
/// hyperparameters and its last value of the experiment's metric.
/// Errors (invalid_argument, each naming the experiment): not a search
/// (`dtrain train`, or a sweep with no searched hyperparameter), a
/// configuration that no longer parses, too few completed trials with a
/// value, a trial whose stored hyperparameters do not parse, and
/// tune::evaluate_importance's own.
result<experiment_importance> importance_of(const experiment_row& e,
                                            const std::vector<trial_row>& trials,
                                            const tune::importance_options& o);

/// The importances as a JSON object: {"method": "fanova", "metric": ...,
/// "trials_used": 12, "trials_total": 20, "parameters": [{"name": "lr",
/// "importance": 0.71}, ...]}.
std::string to_json(const experiment_importance& i);

} // namespace dtrain::experiments
