#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

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
};

/// A started trial: its runner (the tuner monitors it) and a way to stop it
/// early. interrupt() returns at once (it never blocks the caller, an actor
/// thread); the runner then ends its epoch at the replicas' next check,
/// checkpoints when it can, and sends trial_end with interrupted = true.
struct trial_handle {
  caf::actor runner;
  std::function<void()> interrupt;
};

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
