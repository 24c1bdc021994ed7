#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/driver/trainer.hpp"

namespace dtrain::actors {

/// The tuner's private protocol with the actors that run its trials (local
/// messages only; nothing here crosses a process boundary):
///
///   runner -> tuner  (trial_up_atom, trial)                  the trainer is placed and set up
///   runner -> tuner  request (trial_report_atom, trial, epoch, metrics, checkpoints) -> bool
///                    go on? `checkpoints`: the trial's checkpoint directories by epoch
///                    (checkpoint::checkpoint_dirs of its checkpoint_dir, empty without
///                    one), listed by the runner on its own thread so that the tuner's
///                    thread never lists a directory
///   runner -> tuner  (trial_event_atom, trial, epoch, kind, message)  the group failed,
///                    recovered, gave up, shrank or grew (trainer_event)
///   runner -> tuner  (trial_end_atom, trial, restarts, error, interrupted)  slots are free
///
/// A runner waits for the answer to each report before its next epoch, so
/// a trial the scheduler stops never starts another epoch.
using trial_up_atom = caf::atom_constant<caf::atom("trialup")>;
using trial_report_atom = caf::atom_constant<caf::atom("trialrep")>;
using trial_end_atom = caf::atom_constant<caf::atom("trialend")>;
using trial_event_atom = caf::atom_constant<caf::atom("trialevent")>;

/// One trial to run: the trainer configuration (the sweep's template with
/// this trial's hyperparameters and checkpoint directory), where to restore
/// from first, and how many epochs at most.
struct trial_launch {
  std::string id;
  trainer_config config;
  std::string restore_from;  // a checkpoint directory ("" none)
  /// The epoch restore_from stands at was never reported (the driver
  /// before died between the checkpoint and the report): report it first,
  /// its training metrics from the checkpoint's manifest and its
  /// validation run again, before training on.
  bool report_restored = false;
  int64_t max_epochs = 1;
  /// The sweep's metric: a report without it fails the trial, naming the
  /// metrics the operator does report ("" checks nothing).
  std::string metric;
  /// mo: the sweep's other objectives' and its constraints' metrics,
  /// checked as `metric` is.
  std::vector<std::string> other_metrics;
};

/// A started trial: its runner (the tuner monitors it) and a way to stop it
/// early. interrupt() returns at once (it never blocks the caller, an actor
/// thread); the runner then ends its epoch at the replicas' next check,
/// checkpoints when it can, and sends trial_end with interrupted = true.
struct trial_handle {
  caf::actor runner;
  std::function<void()> interrupt;
};

/// Shared by a trial's runner and whoever stops it early: the trainer is
/// published here while it trains, and interrupt() preempts it under the
/// lock, so the runner cannot destroy it in between. Thread-safe.
class trial_control {
public:
  /// False when the trial was interrupted before its trainer was ready.
  bool adopt(trainer* t);
  void release();
  bool interrupted();
  /// Asks the trainer (when there is one) to checkpoint and stop at the
  /// replicas' next check. Blocks up to the trainer's preempt timeout:
  /// call it off actor threads.
  void interrupt();

private:
  std::mutex mutex_;
  trainer* trainer_ = nullptr;
  bool interrupted_ = false;
};

/// One reported epoch of a trial: the metrics map that the tuner and
/// `dtrain train` both record (trainer_launcher's list below), the
/// messages it was made from (for printing) and the trial's checkpoint
/// directories by epoch (empty without a checkpoint_dir).
struct trial_epoch {
  int64_t epoch = 0;
  const metrics_msg* train = nullptr;
  const metrics_msg* validation = nullptr;
  std::map<std::string, double> metrics;
  std::map<int64_t, std::string> checkpoints;
};

/// What a trial's run tells its recorder, each on the run's own thread;
/// any may be empty. `report` answers whether to train on (empty: yes).
struct trial_observer {
  std::function<void(trainer&)> up;                      // placed and set up
  /// restore_from restored: the group's validation says where it stands.
  std::function<void(const metrics_msg& validation)> restored;
  std::function<void(const metrics_msg&)> trained;       // train() returned (preempted or not)
  std::function<bool(const trial_epoch&)> report;
  std::function<void(const trainer_event&)> event;       // after launch.config.on_event
};

/// How a trial's run ended: `error` ok when it trained to the end (or was
/// stopped by a report's answer); `interrupted` when preempted or
/// interrupted through its control; `shutdown` the group's release.
struct trial_outcome {
  int32_t restarts = 0;
  status error;
  bool interrupted = false;
  status shutdown;
};

/// The life of one trial on the calling thread (it blocks for the whole
/// training): create the group on `c`, restore launch.restore_from (and
/// report its epoch first with launch.report_restored), train and validate
/// epoch by epoch up to launch.max_epochs, report each, shut the group
/// down. The one way a trial runs, for the tuner (trainer_launcher) and
/// `dtrain train` alike.
trial_outcome run_trial(cluster& c, trial_launch launch, trial_control& control,
                        const trial_observer& observer);

/// Starts the runner of one trial. The seam between the tuner and the
/// trainers: the real one trains through dtrain::actors::trainer; tests and
/// benchmarks pass their own (a runner that reports scripted values).
using trial_launcher =
    std::function<trial_handle(caf::actor_system& sys, const caf::actor& tuner, const trial_launch& launch)>;

/// Runs each trial as a trainer group on `c`, on a detached actor of its
/// own (trainer calls block; the tuner's thread never does). Metrics per
/// epoch: loss, accuracy (training, the chief's or the group's average),
/// validation_loss, validation_accuracy, lr (the epoch's learning rate),
/// and the operator's own: its training metrics by name, its validation
/// metrics as validation_NAME (operator.hpp's step_metric). `c` must
/// outlive every trial.
trial_launcher trainer_launcher(cluster& c);

} // namespace dtrain::actors
