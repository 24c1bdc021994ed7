#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/tune/search.hpp"

namespace dtrain::tune {

/// Ends trials or the whole sweep on conditions that are not a scheduler's
/// comparison between trials (Ray's Stopper). A trial a stopper ends counts
/// as completed, not stopped. Called from one thread.
class stopper {
public:
  virtual ~stopper() = default;
  /// After each report: end this trial now.
  virtual bool trial_done(const report& r) { (void)r; return false; }
  /// After each report (`last`) and on the tuner's clock (`last` null):
  /// end the whole sweep now. `elapsed_seconds` since the sweep began.
  virtual bool sweep_done(const report* last, double elapsed_seconds) {
    (void)last; (void)elapsed_seconds; return false;
  }
  /// Why it fired, for the sweep's summary: "validation_accuracy reached
  /// 0.9 (0.9012 by trial 00003)".
  virtual std::string describe() const = 0;
};

/// Ends the sweep as soon as a trial reports `metric` at `threshold` or
/// better (>= for max, <= for min).
std::unique_ptr<stopper> make_metric_threshold(std::string metric, double threshold, mode direction);
/// Ends the sweep once `seconds` of wall-clock time have passed.
std::unique_ptr<stopper> make_time_budget(double seconds);
/// Ends each trial at epoch `epochs` (Determined's max_length).
std::unique_ptr<stopper> make_max_epochs(int64_t epochs);

} // namespace dtrain::tune
