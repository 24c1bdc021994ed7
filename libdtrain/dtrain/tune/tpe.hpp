#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// Tree-structured Parzen estimator (Bergstra et al. 2011), Optuna 3.1's
/// TPESampler: the first startup_trials configurations are random draws;
/// after that, the ended trials are split by their value into the best
/// gamma(n) = min(ceil(0.1 n), 25) ("good") and the rest, a Parzen
/// estimator is fitted to each, ei_candidates draws from the good one are
/// scored by log l(x) - log g(x), and the best is suggested.
///
/// Independent (the default, Optuna's multivariate=False): one estimator
/// per hyperparameter (truncated Gaussians for numbers, in log space for
/// log ranges, with Optuna's neighbour bandwidths and prior; weighted
/// categories for choices), each chosen on its own.
/// Multivariate (Optuna's multivariate=True; Falkner et al.'s BOHB
/// estimator): one joint estimator over all hyperparameters, a component
/// per trial that places every hyperparameter at once, bandwidths by
/// Scott's rule (0.2 n^(-1/(d+4)) of each range), so that values that
/// work together are drawn together. `group` (Optuna's group=True, needs
/// multivariate) splits the joint estimator along the parts of the space
/// that trials hold together; a dtrain space has no conditional
/// hyperparameters (every trial holds all of them), so there is one part
/// and group gives what multivariate alone gives.
/// Constant liar (Optuna's constant_liar=True): trials suggested and not
/// ended yet count as observations worse than every ended trial, so they
/// sit in the bad estimator and concurrent trials are steered away from
/// the regions already being tried. They never count toward gamma(n) or
/// the startup.
///
/// A trial's value is its last report's metric (a stopped trial's too);
/// only ended trials are observations besides the liar's running ones (the
/// startup lasts until startup_trials have ended; with several objectives,
/// until startup_trials have completed with every objective, as only those
/// are observations there). Ranked as Optuna ranks
/// them: completed trials by value, then stopped ones (those stopped later
/// first, then by value), then failed trials, NaN values and trials that
/// never reported, the worst, then running ones. Grid dimensions are
/// treated as choices. The startup draws are the variant searcher's for
/// the same seed (plus a uniform pick of each grid dimension). The
/// estimator's densities are Optuna 3.1's to the last digits checked,
/// including its continuous components' missing 1/sigma
/// (parzen_estimator.cpp says why it is kept).
/// Suggests `num_samples` trials in all, then finished; never waits.
/// Deterministic given the seed and the order of calls (suggestions, results
/// and ends interleaved: with the liar, what ran when matters). Not
/// thread-safe (the tuner calls it from one thread).
struct tpe_options {
  std::string metric = "validation_accuracy";
  mode direction = mode::max;
  int64_t num_samples = 20;
  int64_t startup_trials = 10;
  int64_t ei_candidates = 24;
  bool multivariate = false;
  bool group = false;          // only with multivariate
  bool constant_liar = false;
  /// Two or more: multi-objective TPE (Optuna 3.1's TPESampler on several
  /// objectives): only completed trials that reported every objective are
  /// observations (stopped and running ones are not: the liar has no
  /// effect); the good ones are whole non-domination ranks while they fit
  /// in gamma(n), the rank that does not fit cut by greedy hypervolume
  /// subset selection, and each good trial weighs its hypervolume
  /// contribution. `metric` and `direction` are then the first objective's.
  std::vector<objective> objectives;
  /// Optuna's constraints_func: a trial is feasible when every metric is
  /// <= its bound; the good trials are the feasible best, or, when fewer
  /// than gamma(n) are feasible, the least violating (an infeasible good
  /// trial weighs 1e-12 under several objectives). A trial that never
  /// reported a constrained metric violates infinitely.
  std::vector<constraint> constraints;
  uint64_t seed = 0;
};

/// Precondition: `s.validate()` passed.
std::unique_ptr<searcher> make_tpe(const space& s, const tpe_options& o);

} // namespace dtrain::tune
