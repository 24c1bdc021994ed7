#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/data/sampler.hpp"
#include "dtrain/data/transform.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::data {

/// One batch: features [n, F] and targets [n, T] (or [n] when T == 1), on
/// the device the loader was given.
struct batch {
  tensor features;
  tensor targets;
  /// The dataset index of each row that counts; empty for a filler batch
  /// (below).
  std::vector<int64_t> samples;
  /// This rank's share of the step's global batch relative to an even
  /// share: rows * ranks / global rows. 1 while the global batch divides
  /// evenly; different in an epoch's short last step, where a rank that
  /// gets no sample at all receives one filler row with weight 0 (so that
  /// every rank still takes part in the step's collectives). Scaling the
  /// loss gradient by it makes the group's averaged gradient the mean over
  /// the global batch.
  float weight = 1.0f;
  int64_t size() const { return features.defined() ? features.size(0) : 0; }
};

/// How a loader batches and where it delivers; checked by loader::create.
struct loader_options {
  /// Samples per rank per step: the group's global batch is batch_size
  /// times the sampler's num_ranks.
  int64_t batch_size = 32;
  /// Batches assembled ahead by the worker threads; 0 assembles each batch
  /// in next() on the caller's thread.
  int prefetch = 2;
  /// Threads that read, decode and transform batches ahead (with
  /// prefetch > 0): several for data decoded from files (images), one for
  /// data in memory.
  int workers = 1;
  /// Applied to every sample, in order, in the workers.
  transform_list transforms;
  /// Seeds the transforms' draws with the epoch and the sample index.
  uint64_t transform_seed = 0;
  /// Where batches are delivered (copied from the host by the loader).
  device where = device::cpu();
};

/// Iterates over one rank's share of a dataset, epoch by epoch, step by
/// step (see shard_sampler for which samples that is). begin_epoch(e, p)
/// fixes the order and starts at global position p (0, or where a
/// checkpoint stopped); next() hands out batches until the epoch is done.
/// With prefetch > 0, `workers` threads gather batches ahead, in step
/// order, at most `prefetch` batches ahead of the consumer (bounded memory,
/// back-pressure). The loader owns its threads and joins them on
/// destruction or on the next begin_epoch; either returns after at most one
/// dataset::gather per worker in flight, never deadlocks, and leaks nothing.
///
/// Buffers are reused: at most prefetch + 1 batches are ever allocated (a CUDA loader also keeps one host staging batch per worker),
/// so steady-state steps allocate nothing. Hence the batch returned by
/// next() stays valid only until the next call to next() or begin_epoch(); a
/// copied tensor handle aliases the reused buffer, so clone() what must
/// outlive that.
///
/// One consumer thread only: next(), begin_epoch() and the destructor must
/// not race one another. For a CUDA `where` the batch is assembled on the
/// host and copied synchronously to the device by the thread that
/// assembles it.
class loader {
public:
  /// Fails with invalid_argument for a null dataset, batch_size < 1,
  /// prefetch < 0, workers < 1, a null transform or a sampler whose size
  /// differs from the dataset's; with unavailable when `where` is a CUDA
  /// device and there is none.
  static result<std::unique_ptr<loader>> create(std::shared_ptr<const dataset> data,
                                                shard_sampler sampler,
                                                const loader_options& options);
  ~loader();
  loader(const loader&) = delete;
  loader& operator=(const loader&) = delete;

  /// Starts epoch `epoch` (any order of epochs is allowed) at global
  /// position `position` (samples of the epoch the group already trained);
  /// abandons what is left of the current one.
  void begin_epoch(int64_t epoch, int64_t position = 0);
  /// The next batch of the current epoch, or nullptr at its end (and before
  /// the first begin_epoch) or when the dataset failed to deliver it: then
  /// error() says why (naming the file and sample), and the epoch is over.
  /// Blocks while the workers are behind.
  const batch* next();
  /// Why the last next() returned nullptr early; ok at a normal end. Reset
  /// by begin_epoch.
  const status& error() const { return error_; }
  /// Global position after the batches handed out so far: where a resumed
  /// epoch begins.
  int64_t position() const;
  /// position() once the whole epoch was handed out.
  int64_t epoch_end() const;
  /// Steps of a whole epoch (from position 0).
  int64_t batches_per_epoch() const;
  /// Samples of the whole group per step.
  int64_t global_batch() const { return global_batch_; }
  const dataset& source() const { return *data_; }

private:
  // A reusable buffer: full-size tensors on one device, and the batch handed
  // out (views of them; fewer rows for a short batch).
  struct slot {
    tensor features;   // [rows, F]
    tensor targets;    // [rows] or [rows, T]
    std::vector<int64_t> positions;  // scratch: this rank's positions
    batch out;
    status error;      // the dataset's failure to gather this batch
  };

  loader(std::shared_ptr<const dataset> data, shard_sampler sampler,
         const loader_options& options);
  void stop_workers();
  /// current_'s batch, or nullptr with error_ set when it failed.
  const batch* delivered();
  slot make_slot(device where) const;
  void fill(int64_t step, slot& out, slot& staging) const;
  void apply_transforms(slot& host, int64_t rows) const;
  void worker_loop();

  std::shared_ptr<const dataset> data_;
  shard_sampler sampler_;
  loader_options options_;
  int64_t global_batch_ = 0;
  int64_t rows_ = 0;               // the most rows of one batch
  std::vector<int64_t> shape_;     // the dataset's sample_shape()
  // The current epoch, fixed by begin_epoch (read by the workers).
  std::vector<int64_t> order_;
  int64_t epoch_ = 0;
  int64_t start_ = 0;              // global position of its step 0
  int64_t steps_ = 0;              // steps from start_ to its end
  bool in_epoch_ = false;
  status error_;
  int64_t next_step_ = 0;          // next step handed to the consumer
  slot current_;                   // what next() last returned
  slot staging_;                   // host staging for a CUDA `where`, prefetch 0

  // Worker state. Step s is filled into ring_[s % prefetch]: workers take
  // steps in order, at most `prefetch` ahead of next_step_, so a ring entry
  // is never claimed twice; next() swaps the entry with current_, whose
  // buffers the next step of that entry then reuses. claimed_, filled_ and
  // stopping_ are guarded by mutex_ (a worker fills its entry unlocked);
  // cv_ signals both ways (a batch is ready, room to fill, stop).
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t claimed_ = 0;            // next step a worker takes
  std::vector<slot> ring_;
  std::vector<char> filled_;       // ring_[i] holds its step, ready
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

} // namespace dtrain::data
