#pragma once

#include <cstdint>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/pareto.hpp"

namespace dtrain::experiments {

/// mo: the Pareto set of a stored experiment (tune::result_grid::pareto
/// over the store's rows): its objectives and constraints come from the
/// experiment's stored configuration (searcher.metrics and
/// searcher.constraints; a single-metric experiment has the one objective
/// `metric`), each trial's values from its metric rows of its last
/// reported epoch. Trials in the store's order (seq_created). Errors: the
/// store's, or corrupt_data naming the experiment when its stored
/// configuration does not parse. Blocks on the store's reads.
result<std::vector<trial_row>> pareto_trials(experiment_store& s, int64_t experiment);

/// What a page draws of a multi-objective experiment: its objectives, and
/// every trial with its objectives' values at its last reported epoch (NaN
/// where it lacks one) and whether it is in the Pareto set.
struct pareto_view {
  std::vector<tune::objective> objectives;
  struct point {
    trial_row row;
    std::vector<double> values;  // one per objective
    bool pareto = false;
  };
  std::vector<point> trials;  // in the store's order
};
/// The view of stored experiment `experiment`; errors as pareto_trials'.
result<pareto_view> pareto_of(experiment_store& s, int64_t experiment);

} // namespace dtrain::experiments
