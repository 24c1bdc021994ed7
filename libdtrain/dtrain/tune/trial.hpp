#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/search.hpp"

namespace dtrain::tune {

/// A trial's state, in Ray Tune's names.
enum class trial_status {
  pending,     // created, waiting for slots
  running,
  stopped,     // stopped early by the scheduler
  terminated,  // ran its epochs, or a stopper ended it
  error,       // failed past its trainer's recovery
};
const char* to_string(trial_status s);
inline std::ostream& operator<<(std::ostream& out, trial_status s) { return out << to_string(s); }

/// What the tuner knows of one trial: its configuration, state, metrics per
/// epoch and where its checkpoints are. A plain value.
struct trial_record {
  std::string id;
  config configuration;
  trial_status status = trial_status::pending;
  std::vector<report> history;     // one per epoch, in order
  std::string error;               // status error: the cause
  std::string checkpoint_dir;      // "" when the sweep keeps none
  int restarts = 0;                // failures its trainer recovered from
  bool interrupted = false;        // cut short because the sweep ended (Ctrl-C, a stopper)
  double seconds = 0;              // wall time while running
  double started_at = -1;          // seconds into the sweep when its group was ready (-1: never)
  double ended_at = -1;            // seconds into the sweep when its slots were free again

  int64_t epochs() const { return history.empty() ? 0 : history.back().epoch; }
  /// The metric at the last epoch, NaN when never reported.
  double last(const std::string& metric) const;
  /// The best value of the metric over all epochs (NaNs ignored), NaN when
  /// none.
  double best(const std::string& metric, mode direction) const;
};

/// The outcome of a sweep (Ray's ResultGrid): every trial, errored ones
/// included.
struct result_grid {
  std::vector<trial_record> trials;
  std::string metric;
  mode direction = mode::max;
  std::string stop_reason;  // why the sweep ended early ("" when it ran out of trials)
  /// mo: the sweep's objectives (empty: {metric, direction}) and constraints.
  std::vector<objective> objectives;
  std::vector<constraint> constraints;

  /// The trial with the best `best(metric)`; trials with only NaN (or no)
  /// values are never chosen; not_found when no trial has a value.
  result<const trial_record*> best(const std::string& metric, mode direction) const;
  result<const trial_record*> best() const { return best(metric, direction); }
  /// The Pareto set (Optuna's best_trials): the trials no other trial
  /// dominates on the objectives, feasible first (with constraints: the
  /// non-dominated feasible trials, or, when none is feasible, those with
  /// the smallest total violation), in trial order. A trial counts by its
  /// last reported value of each metric (the model it ended with; each
  /// objective's best may come from a different epoch) and only when it
  /// reported every objective and constraint metric (no NaN) and did not
  /// end in an error. Empty when no trial counts.
  std::vector<const trial_record*> pareto() const;
  /// Trials ordered best first by best(metric); those without a value last.
  std::vector<const trial_record*> sorted(const std::string& metric, mode direction) const;
};

} // namespace dtrain::tune
