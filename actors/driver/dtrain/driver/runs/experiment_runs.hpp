#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::runs {

/// The experiment a `dtrain train` or `dtrain tune` run records itself
/// under in the store.
struct experiment_run {
  std::shared_ptr<experiments::experiment_store> store;
  experiments::experiment_row row;
  bool resumed = false;
  std::string previous_state;  // a resumed experiment's state before this run
};

/// Who the checkpoint directory of experiment `row` (its `storage`) belongs
/// to, as its owner marker must say (checkpoint/ownership.hpp): the token
/// in the directory's name (<root>/<id>-<32 hex digits>), or, for a
/// directory named before tokens existed (<root>/<id>), one derived from
/// the row's id, creation time and name ("legacy-" + 16 hex digits), which
/// another store's experiment of the same id does not share. `where` is
/// the store's where().
checkpoint::owner storage_owner(const experiments::experiment_row& row, const std::string& where);

/// The pid of the driver `owner` ("host pid", experiment_row::owner) when
/// it is a live process on this host other than this one, else 0.
int live_driver_here(const std::string& owner);
/// Whether the driver `owner` ("host pid") names this host.
bool owner_is_this_host(const std::string& owner);

/// Without `resume_id` (0): a new experiment of `kind` ("train" or "tune")
/// for `e`, its checkpoints under <checkpoint root>/<id>-<token>/ (the
/// token new and random: no other store's experiment shares the
/// directory), marked as its own (checkpoint::claim). With it: that
/// experiment, refused when it is of another kind, still running in a live
/// process on this host, (unless `force`) when its stored configuration
/// differs from `e`'s, naming every differing key, or when its directory
/// carries another experiment's owner marker (naming whose); a directory
/// without a marker (an experiment from before markers) is adopted, said
/// on stderr. The row is marked running by this process either way.
result<experiment_run> begin_experiment(std::shared_ptr<experiments::experiment_store> s,
                                        const experiments::experiment& e, const std::string& kind,
                                        int64_t resume_id, bool force);

/// Marks the experiment ended: state ("completed", "interrupted",
/// "failed") and why; then flushes the store. Errors are said on stderr
/// (the run's outcome stands).
void end_experiment(experiment_run& run, const std::string& state, const std::string& message);

} // namespace dtrain::runs
