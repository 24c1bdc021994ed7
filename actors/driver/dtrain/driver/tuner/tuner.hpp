#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/trial_runner.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/scheduler.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/space.hpp"
#include "dtrain/tune/stopper.hpp"
#include "dtrain/tune/sweep.hpp"
#include "dtrain/tune/trial.hpp"

namespace dtrain::actors {

/// A sweep's settings (Ray's TuneConfig + RunConfig): the searcher,
/// scheduler and stoppers (tune::sweep_config), the experiment's name, and
/// how it reports.
struct tune_config : tune::sweep_config {
  /// Names the sweep. Without experiment_dir, trials checkpoint under
  /// <storage>/<experiment_id>-<token>/<trial id>/ with a store, else under
  /// <storage>/<experiment>-<YYYYmmdd-HHMMSS>-<token>/<trial id>/, the
  /// token new and random and the directory marked as the sweep's own
  /// (checkpoint/ownership.hpp), so that a new sweep never reads, prunes or
  /// deletes an earlier one's (or another store's) checkpoints.
  std::string experiment = "sweep";
  /// The experiment store the sweep records itself in (every trial, report,
  /// checkpoint, exploit and end; the experiment's state when it ends),
  /// and the experiment's id there (created by the caller). nullptr: none.
  std::shared_ptr<experiments::experiment_store> store;
  int64_t experiment_id = 0;
  /// Continue experiment_id: rebuild the searcher's and scheduler's state
  /// by replaying the stored events, keep the trials that ended, run the
  /// unfinished ones again from their newest checkpoint, then go on.
  bool resume = false;
  /// With resume: a stored trial whose configuration the searcher no
  /// longer suggests is kept as stored instead of failing fit().
  bool force = false;
  /// The checkpoint root; "" = the trial template's checkpoint_dir; both
  /// empty = trials keep no checkpoints (a failed trial then restarts from
  /// its first epoch).
  std::string storage;
  /// The sweep's own checkpoint directory, made and marked by the caller
  /// (`dtrain tune`: the experiment's `storage`), and who its marker must
  /// name: trials checkpoint under <experiment_dir>/<trial id>/. fit()
  /// refuses a directory whose marker is not `owner`'s, and every deletion
  /// the tuner makes there checks the marker first. "": see `experiment`.
  std::string experiment_dir;
  checkpoint::owner owner;
  std::FILE* out = stdout;
  int verbosity = 2;       // 0 silent, 1 trial starts and ends, 2 every epoch
  bool redraw = false;     // redraw the table in place (a terminal)
  /// How long the sweep's end waits for disk work before a launch, and
  /// then for its record in the store (tuner's comment: fit()'s bound).
  double end_seconds = 30;
  /// With redraw: the terminal's width, and each running trial's progress
  /// bar (its chief's, as `dtrain train` draws it) on a line under its row,
  /// updated every progress_seconds, with its trainer's latest note (a
  /// failure, a recovery) above the bar instead of on stderr, unless the
  /// trial template has an on_note of its own; 0: no bars.
  int bar_width = 0;
  double progress_seconds = 1.0;
};

/// Runs a hyperparameter sweep (Ray's Tuner): trials drawn by a searcher
/// from `space`, each a trainer group built from `trial_template` with the
/// trial's hyperparameters (template values not in the space are kept),
/// up to max_concurrent_trials at once and never more than the cluster's
/// slots hold. After every epoch the chief's metrics go to the scheduler,
/// which may stop the trial; stoppers may end trials or the sweep.
///
/// One tuner actor owns the sweep; each trial runs on a detached actor of
/// its own, so no CAF scheduler thread ever blocks on a trainer. Nor on
/// the disk: the store's calls (every write, in order, and the flush and
/// read of the sweep's end; through queued_store), removals of checkpoint
/// directories and resume points (listings, manifests, full
/// verification; resume_scan.hpp) run on one worker thread of the sweep,
/// and the tuner goes on when a job's result comes back as a message; a
/// trial's runner lists its checkpoints with each report (trial_runner.hpp),
/// a PBT copier after its copy. A trial that must wait for such disk work
/// before it starts counts against max_concurrent_trials meanwhile. A trial
/// that fails goes through its trainer's recovery (max_failures, from its
/// newest checkpoint); if it still fails it is ERROR with its cause and the
/// sweep goes on, up to max_failed_trials. A trial that can never fit on the
/// cluster fails fit() at once, naming what is missing.
///
/// fit() blocks the calling thread (not a CAF thread) until the sweep ends
/// and its end is recorded in the store; stop() (thread-safe, e.g. from a
/// signal watcher) interrupts every trial (each checkpoints when it can),
/// frees their slots and makes fit() return the grid so far, with
/// stop_reason set. How long the end may take, once the last trial ended
/// (end_seconds E, the store's bound on one call C: a service_client's
/// request timeout, 30 s by default): trials still waiting for disk work
/// before their launch end as never launched after E (+ up to 1 s, the
/// tuner's tick); the sweep's end is then queued, and if it is not in the
/// store E later fit() fails with a timeout naming it (the store may still
/// say the experiment runs); then fit() waits for the job in flight if it
/// is in the store (one call, at most C; the sweep's record: a read, a
/// write and a flush, at most 3C), drops the jobs not started and leaves
/// a job stuck on the disk behind (after 0.1 s). So at most 2E + 3C +
/// 1.1 s. When fit() returns, no job of the sweep uses the
/// store, or the cluster's actor system, any more: the caller may destroy
/// both (queued_store::close()).
class tuner {
public:
  tuner(cluster& c, trainer_config trial_template, tune::space space, tune_config config);
  ~tuner();

  /// Replace the parts the configuration names (tests; model-based
  /// searchers). Call before fit().
  void set_searcher(std::unique_ptr<tune::searcher> s) { searcher_ = std::move(s); }
  void set_scheduler(std::unique_ptr<tune::scheduler> s) { scheduler_ = std::move(s); }
  void add_stopper(std::unique_ptr<tune::stopper> s) { extra_stoppers_.push_back(std::move(s)); }
  /// How trials run (default: trainer groups on the cluster).
  void set_launcher(trial_launcher l) { launcher_ = std::move(l); }

  result<tune::result_grid> fit();
  void stop(const std::string& reason = "interrupted");

  /// The experiment directory of the last fit() ("" without storage).
  const std::string& experiment_dir() const { return experiment_dir_; }

private:
  status check_capacity(int& limit);
  /// Sets experiment_dir_ and its owner `me` (config_.experiment_dir,
  /// checked; else a new directory under the storage, marked).
  status own_directory(bool recorded, checkpoint::owner& me);

  cluster& cluster_;
  trainer_config template_;
  tune::space space_;
  tune_config config_;
  std::unique_ptr<tune::searcher> searcher_;
  std::unique_ptr<tune::scheduler> scheduler_;
  std::vector<std::unique_ptr<tune::stopper>> extra_stoppers_;
  trial_launcher launcher_;
  std::string experiment_dir_;
  std::mutex actor_mutex_;  // guards actor_ and stop_reason_ against stop()
  caf::actor actor_;        // while fit() runs
  std::string stop_reason_; // stop() before fit() started its actor
};

} // namespace dtrain::actors
