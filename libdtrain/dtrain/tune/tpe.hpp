#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/tune/search.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// Tree-structured Parzen estimator (Bergstra et al. 2011), Optuna 3.1's
/// TPESampler in its default, independent (univariate) form: the first
/// startup_trials configurations are random draws; after that, the ended
/// trials are split by their value into the best gamma(n) =
/// min(ceil(0.1 n), 25) ("good") and the rest, a Parzen estimator is fitted
/// to each per hyperparameter (truncated Gaussians for numbers, in log
/// space for log ranges, with Optuna's bandwidths and prior; weighted
/// categories for choices), ei_candidates draws from the good one are
/// scored by log l(x) - log g(x), and the best is suggested.
///
/// A trial's value is its last report's metric (a stopped trial's too);
/// only ended trials are observations (running ones are ignored, and the
/// startup lasts until startup_trials have ended). Ranked as Optuna ranks
/// them: completed trials by value, then stopped ones (those stopped later
/// first, then by value), then failed trials, NaN values and trials that
/// never reported the metric, the worst. Grid dimensions are treated as
/// choices. The startup draws are the variant searcher's for the same seed
/// (plus a uniform pick of each grid dimension). The estimator's densities
/// are Optuna 3.1's to the last digits checked, including its continuous
/// components' missing 1/sigma (tpe.cpp says why it is kept).
/// Suggests `num_samples` trials in all, then finished; never waits.
/// Deterministic given the seed and the order of calls. Not thread-safe
/// (the tuner calls it from one thread).
struct tpe_options {
  std::string metric = "validation_accuracy";
  mode direction = mode::max;
  int64_t num_samples = 20;
  int64_t startup_trials = 10;
  int64_t ei_candidates = 24;
  uint64_t seed = 0;
};

/// Precondition: `s.validate()` passed.
std::unique_ptr<searcher> make_tpe(const space& s, const tpe_options& o);

} // namespace dtrain::tune
