#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/pareto.hpp"
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
  std::string searcher = "random";  // random | grid | tpe | nsga2
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
  bool tpe_multivariate = false;    // tpe: one joint estimator (Optuna's multivariate)
  bool tpe_group = false;           // tpe: split it by the parts trials hold (needs multivariate)
  bool tpe_constant_liar = false;   // tpe: running trials count as bad observations
  double time_budget_seconds = 0;   // 0: none
  bool has_stop_threshold = false;  // end the sweep when metric reaches stop_threshold
  double stop_threshold = 0;
  int max_failed_trials = -1;       // -1: unlimited
  uint64_t seed = 0;
  // mo (multi-objective): several objectives, constraints, NSGA-II.
  /// Two or more objectives make a multi-objective sweep; empty (or one):
  /// the single `metric` above. When set, `metric` and `direction` are the
  /// first objective's (validate checks it), so that what reads one
  /// metric (the table's column, the journal's best, stoppers) reads the
  /// first. Schedulers other than fifo, tpe and stop_threshold refuse a
  /// multi-objective sweep.
  std::vector<objective> objectives;
  std::vector<constraint> constraints;  // each metric must stay <= its bound
  int64_t nsga2_population_size = 50;   // nsga2: Optuna's population_size
  double nsga2_mutation_prob = -1;      // nsga2: negative is 1 / number of parameters
  double nsga2_crossover_prob = 0.9;
  double nsga2_swapping_prob = 0.5;
  // hyperband (issue 30): direction is taken from above; max_resource 0 is
  // max_epochs; study_name is the experiment's name (the tuner and the
  // experiment file set it; see hyperband.hpp).
  hyperband_options hyperband;
};

/// The sweep's objectives: `objectives` when set, else {metric, direction}.
std::vector<objective> objectives_of(const sweep_config& c);
/// More than one objective.
bool multi_objective(const sweep_config& c);

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
