#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/scheduler.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// Population based training (Jaderberg et al. 2017) in Ray's asynchronous
/// form (PopulationBasedTraining, synch=False), with Ray's defaults:
///
/// At a report of trial T at epoch t: nothing happens unless t >= burn_in
/// and t - (T's last perturbation epoch) >= perturbation_interval. Then T's
/// score is recorded, its last perturbation epoch becomes t, the trials
/// with a score and not ended are ranked, q = ceil(n * quantile_fraction)
/// (at most floor(n / 2); none when n <= 1), and if T is among the q worst
/// it exploits a uniformly chosen one of the q best that has a checkpoint
/// (on_checkpoint): decision::exploit; no such source: go on. Otherwise go on.
///
/// Explore (of the source's configuration, for each mutable hyperparameter):
/// with probability resample_probability a fresh draw from its domain; a
/// choice / grid list: a value not in the list is resampled, otherwise it
/// moves to a neighbouring index (-1 or +1, clamped at the ends); a number:
/// multiplied by 0.8 or 1.2 (an integer truncated toward zero), clamped to
/// its domain's bounds. Constants never change. See tests for the
/// hand-computed cases of ../shared/notes/tune.md section 7.5.
///
/// A grid over a range counts as a number (multiplied, resampled from the
/// range); a quantized range (q > 0) is clamped but not rounded to a
/// multiple of q after a move, as in Ray. A trial whose configuration
/// lacks a mutable name (no on_add) gets a fresh draw for it.
///
/// The plan on_result decided stays until on_exploited or
/// on_exploit_failed (exploit() may be asked again meanwhile). After
/// on_exploited T has the plan's configuration, counts as having a
/// checkpoint (the copy), and inherits the source's perturbation epoch
/// (Ray copies last_perturbation_time); its score stays the one it was
/// ranked with until its next perturbation, as in Ray. Ties rank in the
/// order the trials were first seen. A NaN score ranks worst. A trial
/// that ended (on_end) leaves the ranking until it reports again (a retry
/// or a restart after an exploit). Deterministic given the seed and the
/// order of calls. Not thread-safe (the scheduler contract: one thread).
struct pbt_options {
  mode direction = mode::max;
  int64_t perturbation_interval = 1;   // epochs (>= 1)
  int64_t burn_in = 0;                 // no perturbation before this epoch
  double quantile_fraction = 0.25;     // [0, 0.5]
  double resample_probability = 0.25;  // [0, 1]
  /// The hyperparameters PBT may change; empty = every varying one.
  std::vector<std::string> mutations;
  uint64_t seed = 0;
};

/// Errors (invalid_argument) name the field: an interval < 1, a burn_in
/// < 0, a fraction outside its range, a mutation that is not a
/// hyperparameter of `s` or is a constant, or nothing to mutate (no
/// mutations and no varying hyperparameter in `s`); an invalid `s`.
result<std::unique_ptr<scheduler>> make_pbt(const space& s, const pbt_options& o);

/// The explore step alone (for tests and replays): the configuration PBT
/// would give a trial that copies `source`. `r` is the scheduler's RNG.
config pbt_explore(const space& s, const config& source, const std::vector<std::string>& mutable_names,
                   double resample_probability, rng& r);

} // namespace dtrain::tune
