#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/config/experiment.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/store/experiment_store.hpp"

namespace dtrain::cli {

/// The experiment a `dtrain train` or `dtrain tune` run records itself
/// under in the store.
struct experiment_run {
  std::shared_ptr<store::experiment_store> store;
  store::experiment_row row;
  bool resumed = false;
  std::string previous_state;  // a resumed experiment's state before this run
};

/// Without `resume_id` (0): a new experiment of `kind` ("train" or "tune")
/// for `e`, its checkpoints under <checkpoint root>/<id>/ (a directory left
/// there by an experiment the store no longer knows is moved aside, never
/// read). With it: that experiment, refused when it is of another kind,
/// still running in a live process on this host, or (unless `force`) when
/// its stored configuration differs from `e`'s, naming every differing key.
/// The row is marked running by this process either way.
result<experiment_run> begin_experiment(std::shared_ptr<store::experiment_store> s,
                                        const config::experiment& e, const std::string& kind,
                                        int64_t resume_id, bool force);

/// Marks the experiment ended: state ("completed", "interrupted",
/// "failed") and why; then flushes the store. Errors are said on stderr
/// (the run's outcome stands).
void end_experiment(experiment_run& run, const std::string& state, const std::string& message);

} // namespace dtrain::cli
