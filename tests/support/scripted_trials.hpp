#pragma once

#include <atomic>
#include <memory>

#include "dtrain/driver/tuner/trial_runner.hpp"

namespace dtrain::testing {

/// Launches and ended trials of a scripted sweep, counted across threads.
struct launch_counters {
  std::atomic<int> live{0};
  std::atomic<int> most_live{0};
  std::atomic<int> launched{0};
  std::atomic<int> epochs{0};
};

/// A trial launcher whose runners train nothing: each reports
/// validation_accuracy a - b / epoch (a, b from the trial's hyperparameters,
/// defaults 0.5 and 0.1) every epoch as soon as the tuner answered the last
/// report (after delay_ms when set), fails at epoch fail_at when set, and
/// ends interrupted when interrupt() is called. For tests and benchmarks of
/// the tuner itself.
actors::trial_launcher scripted_trials(std::shared_ptr<launch_counters> n);

} // namespace dtrain::testing
