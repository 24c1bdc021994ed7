#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
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

/// How a loader batches and where it delivers; checked by loader::create.
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
/// gathers batches ahead into a bounded queue of `prefetch` batches. The
/// loader owns its thread and joins it on destruction or on the next
/// begin_epoch; either returns after at most one dataset::gather (plus one
/// device copy) in flight, never deadlocks, and leaks nothing.
///
/// Buffers are reused: at most prefetch + 2 batches are ever allocated (a
/// CUDA loader also keeps one host staging batch), so steady-state steps
/// allocate nothing. Hence the batch returned by next() stays valid only
/// until the next call to next() or begin_epoch(); a copied tensor handle
/// aliases the reused buffer, so clone() what must outlive that.
///
/// One consumer thread only: next(), begin_epoch() and the destructor must
/// not race one another. dataset::gather must not throw (it runs on the
/// prefetch thread). For a CUDA `where` the batch is assembled on the host
/// and copied synchronously to the device by the thread that assembles it.
class loader {
public:
  /// Fails with invalid_argument for a null dataset, batch_size < 1,
  /// prefetch < 0 or a sampler whose size differs from the dataset's; with
  /// unavailable when `where` is a CUDA device and there is none.
  static result<std::unique_ptr<loader>> create(std::shared_ptr<const dataset> data,
                                                shard_sampler sampler,
                                                const loader_options& options);
  ~loader();
  loader(const loader&) = delete;
  loader& operator=(const loader&) = delete;

  /// Starts epoch `epoch` (any order of epochs is allowed); abandons what is
  /// left of the current one.
  void begin_epoch(int64_t epoch);
  /// The next batch of the current epoch, or nullptr at its end (and before
  /// the first begin_epoch) or when the dataset failed to deliver it: then
  /// error() says why (naming the file and sample), and the epoch is over.
  /// Blocks while the prefetch thread is behind.
  const batch* next();
  /// Why the last next() returned nullptr early; ok at a normal end. Reset
  /// by begin_epoch.
  const status& error() const { return error_; }
  /// Batches per epoch for this rank.
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const dataset& source() const { return *data_; }

private:
  // A reusable buffer: full-size tensors on one device, and the batch handed
  // out (views of them; fewer rows for an epoch's last, partial batch).
  struct slot {
    tensor features;   // [batch_size, F]
    tensor targets;    // [batch_size] or [batch_size, T]
    batch out;
    status error;      // the dataset's failure to gather this batch
  };

  loader(std::shared_ptr<const dataset> data, shard_sampler sampler,
         const loader_options& options);
  void stop_worker();
  /// current_'s batch, or nullptr with error_ set when it failed.
  const batch* delivered();
  slot make_slot(device where) const;
  void fill(int64_t batch_index, slot& out);
  void worker_loop();

  std::shared_ptr<const dataset> data_;
  shard_sampler sampler_;
  loader_options options_;
  int64_t batches_per_epoch_ = 0;
  std::vector<int64_t> order_;  // this rank's indices for the current epoch
  bool in_epoch_ = false;
  status error_;
  int64_t next_batch_ = 0;      // next batch index handed to the consumer
  slot current_;                // what next() last returned
  slot staging_;                // host assembly buffer for a CUDA `where`; used
                                // by whichever one thread fills batches

  // Prefetch state, guarded by mutex_; cv_ signals both ways (a batch is
  // ready, a queue place is free, stop).
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<slot> ready_;
  std::vector<slot> spare_;     // buffers handed back for reuse
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace dtrain::data
