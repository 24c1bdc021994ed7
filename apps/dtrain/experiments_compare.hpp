#pragma once

#include "commands.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::cli {

/// `dtrain experiments compare A B ...` (o.ids, at least two): the
/// experiments side by side (kind, state, metric, trials by state, epochs
/// run, best value and trial, the best trial's hyperparameters) and each
/// one's experiment file against the first's (experiments::
/// config_differences: "searcher.name: random -> tpe"); --json for
/// scripts. An unknown id is the store's named error. Returns the exit
/// code.
int compare_experiments(experiments::experiment_store& s, const experiments_options& o);

} // namespace dtrain::cli
