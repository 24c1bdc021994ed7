#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/search.hpp"

namespace dtrain::tune {

enum class decision {
  go_on,
  stop,
  /// Population schedulers (PBT): the trial ends this run and continues
  /// from another trial's checkpoint with new hyperparameters; exploit()
  /// says which and what.
  exploit,
};

/// A PBT exploit: continue from `source`'s newest checkpoint with
/// `configuration` (the source's hyperparameters, explored).
struct exploit_plan {
  std::string source;
  config configuration;
};

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
  /// A trial was created with configuration `c` (before any of its
  /// reports). Population schedulers keep it to explore from.
  virtual void on_add(const std::string& trial, const config& c) { (void)trial; (void)c; }
  /// A valid checkpoint of `trial` at `epoch` exists now (the tuner calls
  /// it before the on_result of that epoch's report). Only trials with one
  /// may be exploit sources.
  virtual void on_checkpoint(const std::string& trial, int64_t epoch) { (void)trial; (void)epoch; }
  /// After on_result returned decision::exploit for `trial`: whom it copies
  /// and its new configuration. The tuner then ends the trial's run, copies
  /// the source's checkpoint into the trial's directory and starts it again
  /// from there; on success it calls on_exploited (the trial's config is
  /// `configuration` from then on), on failure (the source's checkpoint was
  /// gone or invalid) on_exploit_failed, and the trial goes on unchanged.
  virtual exploit_plan exploit(const std::string& trial) {
    (void)trial;
    return {};
  }
  virtual void on_exploited(const std::string& trial, const exploit_plan& plan) {
    (void)trial;
    (void)plan;
  }
  virtual void on_exploit_failed(const std::string& trial) { (void)trial; }
  /// One line for people, e.g. "ASHA (top-k rule): rungs at epochs 1, 4;
  /// reduction factor 4".
  virtual std::string describe() const = 0;
};

/// No early stopping.
std::unique_ptr<scheduler> make_fifo();

/// Asynchronous successive halving in its stopping form (Li et al. 2020,
/// as Optuna's SuccessiveHalvingPruner and Determined's stopping ASHA).
///
/// Rungs sit at grace_period * reduction_factor^k epochs (integer
/// arithmetic, so (1, 1000, 10) gives 1, 10, 100, 1000 where a port with
/// std::log loses the top rung), only those <= max_t when max_t > 0.
///
/// top_k (the default) equals Optuna 3.1's SuccessiveHalvingPruner with
/// in-memory storage, report for report (tests/tune/scheduler_sequences holds sequences
/// replayed through Optuna by tools/reference/make_scheduler_sequences.py).
/// At a report at epoch t the trial is judged at every rung it reached and
/// has not passed yet, lowest first, all with the same value: the value is
/// recorded at the rung (values of every trial count, whatever became of it
/// later: stopped and failed trials' too), and the trial goes on while it
/// is within the best max(n / rf, 1) of the n values there, itself
/// included, ties in its favour. With fewer than rf values a trial must be
/// the best so far; the first at a rung always goes on. NaN: a report that reaches a rung with NaN stops the trial and records
/// nothing; a NaN between rungs is not judged and the trial goes on (both
/// as Optuna, whose pruner only looks at values on rungs).
///
/// percentile is Ray's AsyncHyperBand rule, offered for comparison: a
/// report is judged only at the highest rung it reached that the trial has
/// no value at yet (skipped lower rungs are filled by later reports, as in
/// Ray), and the trial is stopped iff its value is strictly worse than the
/// linear-interpolated 100 * (1 - 1/rf) percentile (numpy's
/// nanpercentile) of the other trials' values there; none there: it goes
/// on. Unlike Ray, a NaN value stops the trial at any report.
///
/// Under both rules the last epoch is judged like any other: when max_t is
/// itself a rung a trial can be stopped on its final epoch (Optuna does so;
/// Ray's ASHA returns STOP at max_t before its rule and only records the
/// value when the trial completes).
///
/// Every rule here stops slow starters early: in the trace of the tuning
/// notes (§7.4: 12 curves a - b/t, rf 2, grace 1) the two trials with the
/// best final values are stopped at epoch 1. A grace_period above 1 suits
/// noisy or slowly rising curves.
///
/// State grows with the reports (one value per trial and rung). A trial
/// that reports again after it ended (a retry under the same id) is not
/// judged again at rungs it already passed.
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
/// Errors (invalid_argument) name the field: grace_period >= 1,
/// reduction_factor >= 2, max_t >= 0, and grace_period <= max_t when
/// max_t > 0 (a rung list without rungs would never stop anything).
result<std::unique_ptr<scheduler>> make_asha(const asha_options& o);
/// The rung epochs of `o`, ascending (an addition to the interface, for
/// describe() and the tests). With max_t 0 the list ends where the next
/// rung would overflow int64. Precondition: `o` passed make_asha's checks.
std::vector<int64_t> asha_rungs(const asha_options& o);

/// Median stopping (Optuna's MedianPruner with interval_steps = 1): a trial
/// is stopped at epoch t when its best value so far is worse than the
/// median of the completed trials' values at epoch t.
///
/// Equals Optuna 3.1's MedianPruner(n_startup_trials = min_completed,
/// n_warmup_steps = warmup_epochs, interval_steps = 1, n_min_trials = 1),
/// report for report. Completed means ended with trial_end::completed
/// (Optuna's COMPLETE); stopped and failed trials never count. A report at
/// epoch t goes on while no trial completed or fewer than min_completed
/// did, or while t < warmup_epochs; otherwise best = the trial's best value
/// over all its reports so far (NaNs skipped; all NaN: stop), p = the
/// median (numpy's nanpercentile 50, linear interpolation) of the values
/// the completed trials reported at exactly epoch t (NaNs skipped; none:
/// go on), and the trial is stopped iff best is strictly worse than p.
/// A second report of an epoch keeps the first value, as Optuna does.
struct median_options {
  mode direction = mode::max;
  int64_t warmup_epochs = 0;   // never stop at an epoch below this (n_warmup_steps)
  int64_t min_completed = 5;   // completed trials needed first (n_startup_trials)
};
/// Errors (invalid_argument) name the field: warmup_epochs >= 0,
/// min_completed >= 0.
result<std::unique_ptr<scheduler>> make_median(const median_options& o);

} // namespace dtrain::tune
