#pragma once

#include <cstdint>
#include <map>
#include <string>

/// What a replica reports while it trains: its progress within an epoch,
/// and an epoch's (or a validation pass's) numbers. Plain values, the same
/// from the replica through the wire (the cluster side sends these very
/// structs) to the driver's trainer and its caller.
namespace dtrain::train {

/// Where a replica is within its training epoch.
struct step_progress {
  int rank = 0;
  int64_t epoch = 0;            // 1-based, the epoch in progress
  int64_t step = 0;             // batches done in it
  int64_t resumed_at = 0;       // of which skipped: the epoch resumed there
  int64_t steps_per_epoch = 0;
  int64_t samples = 0;          // this replica's, this epoch
  double loss = 0;              // mean so far
  double seconds = 0;           // since the epoch began
  double samples_per_second = 0;  // this replica's
};

/// One epoch's (or one validation pass's) numbers.
struct epoch_metrics {
  int64_t epoch = 0;          // 1-based: epochs completed including this one
  int64_t steps = 0;          // optimizer steps in this epoch
  int64_t samples = 0;        // over the replicas counted (all, or this one)
  double loss = 0;            // mean per sample
  double accuracy = 0;        // classification only
  double seconds = 0;
  double samples_per_second = 0;
  /// Training only: seconds this replica waited in the gradient sync's
  /// finish() (all-reduces not hidden behind backward), summed over the
  /// epoch's steps; two clock reads per step.
  double allreduce_seconds = 0;
  float lr = 0;
  /// The group was asked to stop (should_preempt() said so on every
  /// replica): the epoch ended early after `resume_batch` batches; `epoch`
  /// still counts only completed epochs. Save, and the restored group
  /// resumes at that batch.
  bool preempted = false;
  int64_t resume_batch = 0;
  /// The operator's own metrics (step_result::metrics), by name: weighted
  /// means over the samples counted (operator.hpp's step_metric). With fp16
  /// precision also loss_scale (the scale at the epoch's end) and
  /// skipped_steps (optimizer steps skipped in this epoch for a non-finite
  /// gradient), the same on every replica.
  std::map<std::string, double> extra;
};

} // namespace dtrain::train
