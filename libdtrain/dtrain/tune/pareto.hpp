#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/search.hpp"

namespace dtrain::tune {

/// Pareto helpers for multi-objective search, as Optuna 3.1 defines them
/// (study/_multi_objective.py, samplers/nsgaii/_sampler.py,
/// _hypervolume/). Every function works in "minimize" space: a point's
/// coordinates are its objectives turned so that smaller is better
/// (to_minimize). Plain functions over values; no state, thread-safe.

/// One objective of a sweep: a metric the trials report, and which way it
/// improves (Optuna's study direction).
struct objective {
  std::string metric;
  mode direction = mode::min;
};

/// A constraint of a sweep: the metric must stay <= bound (Optuna's
/// constraints_func returning metric - bound).
struct constraint {
  std::string metric;
  double bound = 0;
};

/// One point in objective space, every coordinate to be minimized.
using point = std::vector<double>;

/// `v` as a value to minimize: -v when `direction` is max.
double to_minimize(double v, mode direction);
/// Each value to_minimize'd with its own direction. Precondition: the
/// sizes are equal.
point to_minimize(const std::vector<double>& values, const std::vector<mode>& directions);

/// Optuna's _dominates on complete trials: `a` dominates `b` when it is no
/// worse in every coordinate and the two differ (equal points dominate
/// neither way). Precondition: the sizes are equal.
bool dominates(const point& a, const point& b);

/// A trial's constraint values, Optuna's constraints_func output: each
/// value <= 0 is satisfied, > 0 violated by that much.
using constraint_values = std::vector<double>;

/// metric - bound for each constraint, from `metrics` (NaN for a metric
/// they lack).
constraint_values constraint_values_of(const std::vector<constraint>& constraints,
                                       const std::map<std::string, double>& metrics);

/// Every value <= 0 (an empty list is feasible).
bool feasible(const constraint_values& c);
/// The sum of the positive values: how far the trial is from feasible.
double violation(const constraint_values& c);

/// Optuna 3.1's _constrained_dominates on complete trials that all carry
/// constraint values: a feasible trial beats an infeasible one; of two
/// infeasible trials the one with the smaller total violation wins (equal
/// violations: neither); of two feasible ones, plain domination decides.
/// Precondition: equal sizes of points and of constraint lists.
bool constrained_dominates(const point& a, const constraint_values& ca, const point& b,
                           const constraint_values& cb);

/// Non-dominated sorting: the indices of `points` grouped by front, the
/// non-dominated first. With `constraints` (one list per point, or empty
/// for none) the order is constrained domination's. Within each front the
/// indices are in the order Optuna 3.1's NSGAIISampler._fast_non_dominated_sort
/// leaves them (it swaps the last element into each removed slot), so that
/// the elite selection ties the same way.
std::vector<std::vector<size_t>> non_dominated_sort(
    const std::vector<point>& points, const std::vector<constraint_values>& constraints = {});

/// The first front of non_dominated_sort, in increasing index order:
/// the feasible points no feasible point dominates, or, when no point is
/// feasible, those with the smallest violation that nothing dominates.
std::vector<size_t> pareto_front(const std::vector<point>& points,
                                 const std::vector<constraint_values>& constraints = {});

/// Crowding distance of each point of `front` (indices into `points`),
/// Optuna 3.1's _calc_crowding_distance: per objective the gap between the
/// two neighbours in sorted order over the objective's finite range (1
/// when the range is not positive), the extremes getting infinity, an
/// objective where all points are equal adding nothing. Returned in the
/// order of `front`.
std::vector<double> crowding_distance(const std::vector<point>& points, std::vector<size_t> front);

/// `front` reordered as Optuna's _crowding_distance_sort leaves it: by
/// crowding distance, the largest first (ties in the reverse of the order
/// the last objective's stable sort gave them).
std::vector<size_t> crowding_distance_sort(const std::vector<point>& points,
                                           std::vector<size_t> front);

/// NSGA-II's elite: `size` indices of `points`, Optuna 3.1's
/// _select_elite_population: whole fronts of non_dominated_sort (with
/// `constraints`, constrained) while they fit, the first front that does
/// not fit (or fills it exactly) cut by crowding_distance_sort. In that
/// order. All of them when there are no more than `size`.
std::vector<size_t> select_elite(const std::vector<point>& points,
                                 const std::vector<constraint_values>& constraints, size_t size);

/// The volume dominated by `points` and bounded by `reference` (the WFG
/// algorithm, While et al. 2012, exact in any dimension; a sweep for two
/// objectives). invalid_argument naming the point when one is not <= the
/// reference in every coordinate, or sizes differ, or a value is NaN.
/// An empty set has volume 0.
result<double> hypervolume(std::vector<point> points, const point& reference);

} // namespace dtrain::tune
