#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/train/operator.hpp"
#include "dtrain/train/replica.hpp"

/// What replica_runner adds up over an epoch's steps (internal to the
/// replica; operators see step_result and epoch_metrics only).
namespace dtrain::train {

/// A tensor on a device `comm` accepts, holding `host`'s values.
tensor for_comm(comm::communicator& comm, const tensor& host, device where);

/// The sums of one epoch's step results on one replica: loss times batch
/// size, correct predictions, samples, and per extra metric (in the order
/// first reported) sum(value * weight) and sum(weight). Adding a result
/// without metrics allocates nothing. Not thread-safe.
class step_totals {
public:
  /// Adds one batch of `samples`. Errors (naming the metric): a non-finite
  /// loss, a metric name that is malformed or reserved (operator.hpp's
  /// step_metric), a weight that is not > 0, a value that is not finite.
  status add(const step_result& r, int64_t samples);

  /// Replaces the sums by their sums over the group of `ctx`: one
  /// all-reduce, and when any replica has extra metrics, an all_gather of
  /// their names and an all-reduce of the union's sums (a metric a replica
  /// never reported counts as nothing there). Every replica must call it.
  status reduce(replica_context& ctx);

  /// Loss, accuracy, samples and the extra metrics' weighted means into `m`.
  void report(epoch_metrics& m) const;

  int64_t samples() const { return samples_; }
  double mean_loss() const {
    return samples_ > 0 ? loss_sum_ / static_cast<double>(samples_) : 0;
  }

private:
  struct named_sum {
    std::string name;
    double weighted = 0;  // sum of value * weight
    double weight = 0;
  };
  named_sum* find(const std::string& name);

  double loss_sum_ = 0;
  int64_t correct_ = 0;
  int64_t samples_ = 0;
  std::vector<named_sum> extra_;
};

} // namespace dtrain::train
