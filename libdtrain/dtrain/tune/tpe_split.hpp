#pragma once

#include <cstddef>
#include <vector>

#include "dtrain/tune/pareto.hpp"

/// How TPE splits its observations into good ("below") and bad ones when
/// there are several objectives or constraints, as Optuna 3.1's
/// samplers/_tpe/sampler.py does (_split_observation_pairs,
/// _calculate_weights_below_for_multi_objective, _hypervolume/hssp.py).
/// Internal to dtrain::tune (tpe.cpp and its tests). Plain functions.
namespace dtrain::tune::detail {

/// Which observations are good and what each good one weighs.
struct tpe_split {
  std::vector<size_t> below;          // indices into the observations
  std::vector<size_t> above;
  std::vector<double> below_weights;  // aligned with `below`; empty: the default weights
};

/// Greedy hypervolume subset selection (Optuna's _solve_hssp, a 1 - 1/e
/// approximation): `size` of `points` (indices into them), each pick the
/// one adding the most volume up to `reference`, contributions updated as
/// Optuna updates them. Precondition: every point <= reference.
std::vector<size_t> greedy_hypervolume_subset(const std::vector<point>& points, size_t size,
                                              const point& reference);

/// Optuna's reference point for a set of losses: per coordinate
/// max(1.1 w, 0.9 w) of the worst value w, a zero made 1e-12.
point reference_point(const std::vector<point>& points);

/// Several objectives (losses to minimize, one point per observation):
/// whole non-domination ranks go below while they fit in `n_below`, the
/// rank that does not fit is cut by greedy_hypervolume_subset. Below in
/// selection order, above in index order.
tpe_split split_objectives(const std::vector<point>& losses, size_t n_below);

/// Each good observation's weight: its hypervolume contribution among the
/// feasible good ones (+1e-12), over the largest, clipped to [0, 1]; 1e-12
/// for infeasible ones; one feasible: 1. `violations` empty: all feasible.
std::vector<double> below_weights(const std::vector<point>& losses, const std::vector<size_t>& below,
                                  const std::vector<double>& violations);

/// With constraints (a violation per observation, 0 when feasible): the
/// `n_below` least violating when they include an infeasible one, else
/// the feasible ones split by `split_feasible` (indices into the list it
/// is given) and every infeasible one above. Both in index order.
template <class Split>
tpe_split split_with_violations(const std::vector<double>& violations, size_t n_below,
                                Split split_feasible);

} // namespace dtrain::tune::detail

#include "dtrain/tune/tpe_split_inl.hpp"
