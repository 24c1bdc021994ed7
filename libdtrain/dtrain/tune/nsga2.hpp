#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// NSGA-II (Deb et al. 2002) as Optuna 3.1's NSGAIISampler with its
/// defaults: generations of `population_size` trials; the first generation
/// random; each later trial a child of the previous generation's elite
/// (parents by binary tournament under (constrained) domination, uniform
/// crossover with probability crossover_prob swapping each parameter with
/// probability swapping_prob, else a copy of a random elite member), each
/// parameter then redrawn at random with probability mutation_prob
/// (1 / the number of parameters when negative, Optuna's None).
///
/// Generations as Optuna keeps them ("nsga2:generation"): a trial's
/// generation is fixed when it is suggested, one more than the newest
/// generation whose population is known. Generation g's population is
/// known once at least population_size of its trials completed; its elite
/// is the best population_size of those completed trials together with
/// generation g-1's elite, by non-dominated rank, the last front cut by
/// crowding distance. Only completed trials count: failed and stopped
/// trials, trials without a value of every objective (or with a NaN), and,
/// with constraints, trials without a value of every constraint's metric
/// are left out, as Optuna leaves out trials that are not COMPLETE.
///
/// Trials still running (the tuner asks while others run): they count
/// for nothing until they end, so a generation may hold more than
/// population_size trials, those suggested while it filled (as Optuna's
/// parallel workers); a trial that completes after its generation's elite
/// was first chosen joins it when the elite is next computed (Optuna
/// recomputes it while the generation has running trials).
///
/// A trial's objective values are the last reported values of the metrics
/// (as the TPE searcher reads a trial's value); constraint values are the
/// last value minus the bound, feasible when all are <= 0 (the
/// feasible-first rule of pareto.hpp's constrained_dominates).
/// Constant hyperparameters (one possible value) are drawn, not inherited,
/// and do not count as parameters for mutation_prob (Optuna samples them
/// outside its relative search space).
///
/// Suggests `num_samples` trials in all, then finished; never waits.
/// Deterministic given the seed and the order of calls, so a new searcher
/// fed the same calls (a resumed sweep's replay) suggests the same trials.
/// The random stream is dtrain's (core/random.hpp), not numpy's: same
/// algorithm as Optuna, not the same draws. Not thread-safe.
struct nsga2_options {
  std::vector<objective> objectives;    // at least one
  std::vector<constraint> constraints;  // none: plain domination
  int64_t num_samples = 200;
  int64_t population_size = 50;  // at least 2
  double mutation_prob = -1;     // in [0, 1], or negative: 1 / number of parameters
  double crossover_prob = 0.9;
  double swapping_prob = 0.5;
  uint64_t seed = 0;
};

/// Checks the options (objectives non-empty, population_size >= 2,
/// probabilities in [0, 1]); errors name the field.
status validate(const nsga2_options& o);

/// Precondition: `s.validate()` and validate(o) passed.
std::unique_ptr<searcher> make_nsga2(const space& s, const nsga2_options& o);

} // namespace dtrain::tune
