#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/hyperband.hpp"
#include "dtrain/tune/pbt.hpp"
#include "dtrain/tune/scheduler.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/space.hpp"
#include "dtrain/tune/stopper.hpp"

namespace dtrain::tune {

/// A sweep's settings (Ray's TuneConfig, Determined's searcher section):
/// which searcher and scheduler, with their knobs, and the stoppers. A
/// plain value; `make_*` below build the parts.
struct sweep_config {
  std::string metric = "validation_accuracy";
  mode direction = mode::max;
  std::string searcher = "random";  // random | grid | tpe
  /// random: the number of trials; grid: repetitions of the grid (Ray's
  /// num_samples; Determined's max_trials for random).
  int64_t num_samples = 1;
  int max_concurrent_trials = 0;    // 0: as many as the cluster holds
  int64_t max_epochs = 1;           // per trial (Determined's max_length.epochs)
  std::string scheduler = "fifo";   // fifo | asha | median | pbt | hyperband
  asha_options asha;                // direction and max_t are taken from above
  median_options median;            // direction is taken from above
  pbt_options pbt;                  // direction and seed are taken from above
  int64_t tpe_startup_trials = 10;  // tpe: random trials first (Optuna's n_startup_trials)
  int64_t tpe_ei_candidates = 24;   // tpe: candidates scored per suggestion
  double time_budget_seconds = 0;   // 0: none
  bool has_stop_threshold = false;  // end the sweep when metric reaches stop_threshold
  double stop_threshold = 0;
  int max_failed_trials = -1;       // -1: unlimited
  uint64_t seed = 0;
  // hyperband (issue 30): direction is taken from above; max_resource 0 is
  // max_epochs; study_name is the experiment's name (the tuner and the
  // experiment file set it; see hyperband.hpp).
  hyperband_options hyperband;
};

/// Metric names the trainer reports each epoch for every operator.
const std::vector<std::string>& known_metrics();
/// A sweep's metric: one of known_metrics(), or an operator's own metric
/// (NAME or validation_NAME: letters, digits and '_'), which only a trial
/// can confirm (a trial whose reports lack it fails, naming what they
/// hold). An error lists the built-in names.
status check_metric(const std::string& metric);

/// Checks the settings (metric known, counts positive, scheduler knobs);
/// errors name the field.
status validate(const sweep_config& c);

std::unique_ptr<searcher> make_searcher(const space& s, const sweep_config& c);
/// fifo, asha (max_t = max_epochs), median, pbt (over `s`) or hyperband
/// (max_resource 0 = max_epochs), in the sweep's direction (defined in scheduler.cpp, beside the schedulers).
result<std::unique_ptr<scheduler>> make_scheduler(const sweep_config& c, const space& s = space{});
/// max_epochs, then the time budget and threshold when set.
std::vector<std::unique_ptr<stopper>> make_stoppers(const sweep_config& c);

} // namespace dtrain::tune
