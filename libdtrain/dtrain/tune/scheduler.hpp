#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/search.hpp"

namespace dtrain::tune {

enum class decision { go_on, stop };

/// Decides after every report whether a trial goes on (Ray's
/// TrialScheduler, Optuna's pruner). Called from one thread, in the order
/// the reports arrived; concurrent trials interleave.
class scheduler {
public:
  virtual ~scheduler() = default;
  /// Trial `trial` reached `epoch` (1-based) with `value` of the sweep's
  /// metric (NaN allowed). Called for every report, the last epoch's too.
  virtual decision on_result(const std::string& trial, int64_t epoch, double value) = 0;
  /// The trial ended (completed, stopped by this scheduler, or failed).
  virtual void on_end(const std::string& trial, trial_end how) = 0;
  /// One line for people, e.g. "ASHA (top-k rule): rungs at epochs 1, 4;
  /// reduction factor 4".
  virtual std::string describe() const = 0;
};

/// No early stopping.
std::unique_ptr<scheduler> make_fifo();

/// Asynchronous successive halving in its stopping form (Li et al. 2020,
/// as Optuna's SuccessiveHalvingPruner and Determined's stopping ASHA).
struct asha_options {
  mode direction = mode::max;
  int64_t grace_period = 1;       // the first rung, in epochs (>= 1)
  int64_t reduction_factor = 4;   // rung k is at grace_period * reduction_factor^k (>= 2)
  int64_t max_t = 0;              // no rung past this epoch (0: no limit)
  enum class rule {
    top_k,       // Optuna/Determined: within the top max(n / rf, 1) at the rung, self included
    percentile,  // Ray: not below the (1 - 1/rf) percentile of the others at the rung
  };
  rule keep_rule = rule::top_k;
};
result<std::unique_ptr<scheduler>> make_asha(const asha_options& o);

/// Median stopping (Optuna's MedianPruner with interval_steps = 1): a trial
/// is stopped at epoch t when its best value so far is worse than the
/// median of the completed trials' values at epoch t.
struct median_options {
  mode direction = mode::max;
  int64_t warmup_epochs = 0;   // never stop at an epoch below this (n_warmup_steps)
  int64_t min_completed = 5;   // completed trials needed first (n_startup_trials)
};
result<std::unique_ptr<scheduler>> make_median(const median_options& o);

} // namespace dtrain::tune
