#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::runs {

/// How `dtrain train` runs an experiment (its flags, parsed).
struct train_request {
  std::string file;       // the experiment file as given (for the --resume hint it prints)
  int64_t resume = 0;     // continue this experiment (0: a new one)
  bool force = false;     // resume even when the file's configuration changed
  bool verbose = false;   // every rank's progress lines instead of the group's bar
  /// Installs the caller's signal handling while the group trains: called
  /// once, with what a signal should do (ask the replicas to checkpoint
  /// and stop); the handling stays installed while the returned object
  /// lives. Empty: signals are left as they are.
  std::function<std::shared_ptr<void>(std::function<void()> on_signal)> watch_signals;
};

/// Runs experiment `e` (one without a search) as `dtrain train` does: one
/// trial, 00000, through the tuner's trial runner (actors::run_trial), on
/// `c`, recorded in `store` as a sweep records each of its trials (the
/// same journal, the same metrics every epoch: actors::trainer_launcher's
/// list, the operator's own included), checkpointing under the
/// experiment's own directory <checkpoint root>/<id>-<token>/00000. A
/// resume (r.resume) starts again where the tuner's would
/// (actors::scan_for_resume). Prints the run on stdout (the experiment
/// line, a progress bar on a terminal, a line per epoch, the validation at
/// the end); blocks until the training ends. Ok when the trial completed
/// or was preempted (checkpointed, resumable), else the error, already
/// recorded (the experiment marked failed, never left running).
status train_experiment(actors::cluster& c,
                        const std::shared_ptr<experiments::experiment_store>& store,
                        const experiments::experiment& e, const train_request& r);

} // namespace dtrain::runs
