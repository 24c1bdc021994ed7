#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

/// One trial as importance sees it: its configuration and its objective
/// value. Callers pass only trials that completed (Optuna's COMPLETE: not
/// stopped early, not failed); trials whose value is not finite are left
/// out here, as Optuna leaves them out.
struct importance_trial {
  std::string id;  // for errors
  config configuration;
  double value = 0;
};

/// How hyperparameter importance is assessed.
///
/// fanova: Optuna 3.1's FanovaImportanceEvaluator. A random forest
/// (fit_forest: 64 trees, depth 64, exact splits) regresses the value on
/// the parameters; each tree's functional ANOVA gives the share of its
/// variance that each parameter's marginal explains; shares are averaged
/// over the trees (those of non-zero variance) and normalized to sum 1.
///
/// fast: the same decomposition on a smaller forest of histogram trees (16
/// trees, depth 12, at most 32 bins per column, nodes of fewer than 8
/// distinct rows not split). It estimates the same quantity as fanova, so
/// its numbers read the same and rank alike (the suite importance checks
/// both against Optuna's). The forest's fit dominates fanova's time; a
/// histogram node costs one pass over its rows for every column at once
/// instead of a sorted scan per column, and fewer, shallower trees cut
/// both the fit and the decomposition: 1,000 trials x 8 parameters take
/// milliseconds (tools/bench/bench_importance.cpp). Mean decrease in
/// impurity (Optuna's other evaluator) would cost the same fit but
/// measures something else and favours parameters with many values.
enum class importance_method { fanova, fast };

/// "fanova" | "fast"; invalid_argument naming the known ones otherwise.
result<importance_method> parse_importance_method(const std::string& name);
const char* to_string(importance_method m);

struct importance_options {
  importance_method method = importance_method::fanova;
  uint64_t seed = 0;
  /// Numbers of a log range as they are (false: Optuna 3.1's fANOVA, which
  /// builds its space with transform_log=False) or as their logarithm
  /// (true: cells of equal width in the exponent weigh the same).
  bool log_scale = false;
  /// 0: the method's own (fanova / fast: 64 / 16 trees, depth 64 / 12,
  /// exact / 32 bins).
  int trees = 0;
  int max_depth = 0;
  int max_bins = -1;  // -1: the method's own; 0: exact splits
  /// Threads growing and decomposing the trees (0: one per core); the
  /// numbers are the same for any count.
  int threads = 0;
};

/// One hyperparameter's share of the explained variance.
struct parameter_importance {
  std::string name;
  double importance = 0;  // in [0, 1]; the shares sum to 1 (or are all 0)
};

/// The least number of usable trials evaluate_importance accepts.
constexpr size_t min_importance_trials = 2;

/// The importance of each varying hyperparameter of `s` (constants are
/// not listed; a range of one value is listed with 0), most important
/// first, ties by name. Numbers (integer, uniform, log_uniform, a grid
/// range) are one column each, bounded by their domain (widened to any
/// value outside it); a choice is one-hot encoded, one column per choice in
/// [0, 1], as Optuna encodes categoricals, and its columns' marginal is
/// taken jointly. When every tree's variance is 0 or no parameter's
/// marginal explains any of it, every importance is 0.
///
/// Errors (invalid_argument): fewer than min_importance_trials trials with
/// a finite value ("importance needs at least 2 completed trials with a
/// finite value, got 1"), a trial missing a parameter or holding a value
/// its domain cannot (naming the trial and the parameter), every trial of
/// the same value. Deterministic: the same trials, space and options give
/// the same numbers. Blocks the caller for the forest's fit (milliseconds
/// for 1,000 trials with fast, about ten times that with fanova).
result<std::vector<parameter_importance>> evaluate_importance(
    const space& s, const std::vector<importance_trial>& trials, const importance_options& o);

} // namespace dtrain::tune
