#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/zero/shard_layout.hpp"

namespace dtrain::comm {

enum class compression { none, fp16, bf16 };
const char* to_string(compression c);
/// "none", "fp16" or "bf16"; anything else is an error naming the value.
result<compression> parse_compression(const std::string& name);

struct gradient_sync_options {
  /// Bucket size; the bucket at the end of the gradient buffer (the last
  /// layers, whose gradients backward produces first) is first_bucket_bytes,
  /// so communication starts early (as PyTorch DDP's 1 MiB first bucket).
  /// Buckets hold whole parameters: one is closed before the parameter that
  /// would take it past its size, and a larger parameter is one of its own;
  /// then each boundary moves up to a multiple of the group's size (the
  /// bucket below takes fewer than N elements of the parameter above), the
  /// same at every ZeRO stage.
  int64_t bucket_bytes = 25 << 20;
  int64_t first_bucket_bytes = 1 << 20;
  /// Synchronize every k-th micro-batch only; the ones between accumulate
  /// locally (Determined's optimizations.aggregation_frequency).
  int aggregation_frequency = 1;
  /// What is sent: float32, or 16-bit floats (Determined's
  /// gradient_compression). Compressed buckets are all-gathered as 16-bit
  /// values and summed in float32, in rank order, by every rank: half the
  /// bytes of a float32 ring all-reduce at N = 2, the same at N = 4.
  compression compress = compression::none;
  /// ZeRO (zero/shard_layout.hpp): from stage 1 on, bucket boundaries are
  /// multiples of the group's size and layout() says which part of each
  /// bucket this rank owns; at stage 2 each bucket is reduce-scattered in
  /// place instead of all-reduced, so that after finish() only the owned
  /// parts hold the group's mean. In host memory, when the other ranks'
  /// parts of some bucket span at least two 2 MiB pages, the gradients live
  /// in private huge-page memory, bucket boundaries move up to multiples of
  /// N pages (so that every chunk is whole pages), the buckets in flight
  /// are kept to two (backward waits for older ones), and the pages of those parts are
  /// given back to the system as soon as their bucket is reduced (they read
  /// as zeros until the next backward writes them), so the whole gradient
  /// is never resident at once (released_bytes()). Stage 2 does not combine
  /// with compression.
  int zero_stage = 0;
};

/// Data-parallel gradient averaging over a model's flat gradient buffer.
///
/// The buffer is cut into buckets from its end. As backward reports each
/// layer's gradients ready (nn::model's hook, last layer first), every
/// bucket lying wholly in the ready part is all-reduced at once,
/// asynchronously, so communication overlaps the rest of backward; finish()
/// waits for the rest. After finish() every rank holds the same gradients,
/// bit for bit: the mean over ranks (and over the micro-batches of an
/// aggregation period) of the local gradients.
///
/// On the CPU the model's gradients move into the communicator's
/// shared_buffer() (create() is collective: every rank creates its sync in
/// the same order), so the shared memory backend reduces them in place.
///
/// Per micro-batch: begin_micro_batch() says whether backward should
/// overwrite or accumulate; backward runs; finish() syncs on the last
/// micro-batch of a period (and returns true: step the optimizer), else
/// returns false at once. Installs itself as the model's gradient-ready hook
/// and removes it on destruction; model and communicator must outlive it.
/// Not thread-safe. A failed all-reduce (timeout, dead peer) is returned by
/// finish() with its cause.
class gradient_sync {
public:
  static result<std::unique_ptr<gradient_sync>> create(nn::model& model, communicator& comm,
                                                       const gradient_sync_options& options);
  ~gradient_sync();
  gradient_sync(const gradient_sync&) = delete;
  gradient_sync& operator=(const gradient_sync&) = delete;

  struct micro_batch {
    bool accumulate;  // pass to model.backward()
    bool syncs;       // this micro-batch ends the aggregation period
  };
  micro_batch begin_micro_batch();
  /// Launches nothing while backward runs in this micro-batch: finish()
  /// reduces every bucket. For a step that changes gradients() after
  /// backward() or calls backward() more than once (train::step_context::
  /// hold_gradient_sync()). invalid_argument when a bucket of this
  /// micro-batch was already launched: it may be in flight.
  status hold();
  /// Completes the micro-batch: on a syncing one, waits for every bucket;
  /// returns whether the gradients are now synchronized (step the optimizer).
  result<bool> finish();

  size_t bucket_count() const { return buckets_.size(); }
  /// The buckets' [begin, end) element ranges, the end of the buffer first.
  std::vector<std::pair<int64_t, int64_t>> bucket_ranges() const;
  /// Buckets of the last sync launched before backward had finished.
  int launched_during_backward() const { return early_launches_; }
  /// Bytes of gradient memory given back between steps (stage 2 on the
  /// CPU, chunks large enough to hold whole 2 MiB pages), else 0.
  int64_t released_bytes() const;
  /// Who owns which part of every bucket (options.zero_stage >= 1), else null.
  const zero::shard_layout* layout() const {
    return options_.zero_stage > 0 ? &layout_ : nullptr;
  }

private:
  struct bucket {
    int64_t begin, end;  // element range in the gradient buffer
    work_ptr pending;
    tensor packed, gathered;  // compression scratch
  };

  gradient_sync(nn::model& model, communicator& comm, const gradient_sync_options& options);
  void on_ready(int64_t offset);
  void launch(bucket& b);
  /// Stage 2: the bucket reduce-scattered, in place or through `packed`.
  void launch_scatter(bucket& b, const zero::bucket_shard& part);
  const zero::bucket_shard& part_of(const bucket& b) const;
  /// Stage 2, host memory: frees the pages of a reduced bucket that lie
  /// wholly in parts other ranks own.
  void release_foreign(const zero::bucket_shard& part);
  /// Chooses where the gradients live (see place_gradients() in the .cpp).
  status place_gradients();
  status complete(bucket& b);
  /// Plans the buckets: whole parameters, boundaries moved up to multiples
  /// of `align` (the group's size, or N huge pages when pages go back).
  status plan_buckets(int64_t align);

  nn::model& model_;
  communicator& comm_;
  gradient_sync_options options_;
  std::vector<bucket> buckets_;  // buckets_[0] is at the END of the buffer
  zero::shard_layout layout_;    // by position: layout_.buckets()[i] is buckets_[size - 1 - i]
  size_t next_launch_ = 0;
  int micro_ = 0;                // micro-batches into the current period
  bool syncing_ = false;
  bool backward_done_ = false;
  bool held_ = false;            // hold() in this micro-batch
  int early_launches_ = 0;
  bool releasing_ = false;       // stage 2 frees foreign gradient pages
};

} // namespace dtrain::comm
