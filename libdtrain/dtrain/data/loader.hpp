#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/data/sampler.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::data {

/// One batch: features [n, F] and targets [n, T] (or [n] when T == 1), on
/// the device the loader was given.
struct batch {
  tensor features;
  tensor targets;
  int64_t size() const { return features.defined() ? features.size(0) : 0; }
};

struct loader_options {
  int64_t batch_size = 32;
  /// Drop the last batch of an epoch when it is smaller than batch_size.
  bool drop_last = false;
  /// Batches assembled ahead by a background thread; 0 assembles each batch
  /// in next() on the caller's thread.
  int prefetch = 2;
  /// Where batches are delivered (copied from the host by the loader).
  device where = device::cpu();
};

/// Iterates over one rank's shard of a dataset, epoch by epoch, in batches.
/// begin_epoch(e) fixes the order (the sampler's for epoch e); next() hands
/// out batches until the epoch is done. With prefetch > 0 a background thread
/// gathers batches ahead into a bounded queue. The loader owns its thread and
/// joins it on destruction or on the next begin_epoch. One consumer thread
/// only. The batch returned by next() stays valid until the next call.
class loader {
public:
  static result<std::unique_ptr<loader>> create(std::shared_ptr<const dataset> data,
                                                shard_sampler sampler,
                                                const loader_options& options);
  ~loader();
  loader(const loader&) = delete;
  loader& operator=(const loader&) = delete;

  /// Starts epoch `epoch` (any order of epochs is allowed).
  void begin_epoch(int64_t epoch);
  /// The next batch of the current epoch, or nullptr at its end.
  const batch* next();
  /// Batches per epoch for this rank.
  int64_t batches_per_epoch() const;
  const dataset& source() const { return *data_; }

private:
  loader(std::shared_ptr<const dataset> data, shard_sampler sampler,
         const loader_options& options);
  void stop_worker();
  void fill(int64_t batch_index, batch& out) const;
  void worker_loop();

  std::shared_ptr<const dataset> data_;
  shard_sampler sampler_;
  loader_options options_;
  std::vector<int64_t> order_;
  int64_t next_batch_ = 0;      // next batch index handed to the consumer
  batch current_;               // what next() last returned

  // Prefetch state, guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<batch> ready_;
  std::vector<batch> spare_;    // buffers handed back for reuse
  int64_t produced_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace dtrain::data
