#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/comm/communicator.hpp"
#include "dtrain/comm/gradient_sync.hpp"
#include "dtrain/data/loader.hpp"
#include "dtrain/tensor/precision.hpp"
#include "dtrain/train/async_checkpoint.hpp"
#include "dtrain/train/loss_scaler.hpp"
#include "dtrain/train/metrics.hpp"
#include "dtrain/train/operator.hpp"
#include "dtrain/zero/parameter_shards.hpp"

namespace dtrain::train {

class step_totals;

/// How a replica trains; the same on every replica of a group.
struct replica_options {
  std::string operator_name;
  /// Hashes of loaded plugins (plugin/loader.hpp) the operator is looked
  /// up in first; then the process-wide registry.
  std::vector<std::string> plugins;
  hyperparameters config;
  /// Split evenly across replicas; the remainder is dropped (a global batch
  /// of 257 on 2 replicas trains 128 per replica). Must give >= 1 each.
  int64_t global_batch_size = 128;
  int aggregation_frequency = 1;
  /// Metrics averaged over all replicas (else each replica reports its own,
  /// and the trainer takes the chief's).
  bool average_training_metrics = true;
  comm::compression compress = comm::compression::none;
  /// The gradient sync's bucket size; 0: 4 MiB on the CPU (all-reduces
  /// in shared memory or over Gloo cost little each, and smaller buckets
  /// overlap more of backward), 25 MiB on a GPU (PyTorch DDP's default)
  /// and under ZeRO stage 2 (whose chunks then hold whole 2 MiB pages to
  /// give back).
  int64_t bucket_bytes = 0;
  uint64_t seed = 0;
  int prefetch = 2;
  /// Progress at most this often during an epoch (0: never): to
  /// on_progress when set, else as a "[rank R] epoch E step S/T ..." line
  /// on stdout.
  double progress_seconds = 0;
  /// Receives the progress, on the training thread (keep it short).
  std::function<void(const step_progress&)> on_progress;
  /// How save() and restore() encode checkpoints (serialization/'s
  /// default_checkpoint_codec()); without one they return unavailable.
  std::shared_ptr<checkpoint::codec> codec;
  /// Whether a smaller value of save()'s best_metric is better (a loss).
  bool smaller_is_better = true;
  /// What the model's GEMMs compute in (the trainer's `precision`). fp32
  /// keeps whatever the operator's model was built with; any other value
  /// replaces it. Storage, the gradient sync and the optimizer stay float32.
  precision compute = precision::fp32;
  /// Dynamic loss scaling, used when the model computes in fp16.
  loss_scaler_options loss_scaling;
  /// Step-granular asynchronous checkpoints taken during train_epoch()
  /// (async_checkpoint.hpp; needs `codec`); off by default.
  async_checkpoint_options async_checkpoint;
  /// ZeRO (zero/shard_layout.hpp): 1 splits the optimizer state across the
  /// group, 2 also the averaged gradients, 3 also the parameters
  /// (zero/parameter_shards.hpp; host memory only); 0 keeps everything on
  /// every replica. Needs a shardable optimizer (stage 3: dtrain's own). Checkpoints hold the
  /// whole state whatever the stage, so any stage and group size restores
  /// them.
  int zero_stage = 0;
  /// Clips the averaged gradient to this L2 norm (torch's
  /// clip_grad_norm_, over the whole gradient at every stage); 0: off.
  float clip_grad_norm = 0.0f;
};

/// The CAF-free core of a replica: an operator's model, optimizer and data
/// shard, and the epoch loop with gradient sync. The replica actor is a
/// thin shell around it. All calls block the calling thread (the actor runs
/// detached); every replica of the group must make the same calls in the
/// same order, since they run collectives. Not thread-safe, except
/// request_preemption().
class replica_runner {
public:
  /// Builds the operator's parts, this rank's data shard and the gradient
  /// sync. Errors name the operator, the field or the dataset at fault.
  static result<std::unique_ptr<replica_runner>> create(const replica_options& options,
                                                        std::unique_ptr<replica_context> ctx);
  ~replica_runner();

  /// Trains the next epoch (1, 2, ...), one operator train_step() per batch
  /// (operator.hpp says what happens around it). Metrics are averaged over
  /// the group when options.average_training_metrics, else this
  /// replica's. A step's error is returned naming the operator.
  ///
  /// The model's buffers (nn::model::buffers(), e.g. BatchNorm's running
  /// statistics) are not synchronized by the gradient sync: each replica
  /// moves its own with its own batches. At the end of every epoch, a
  /// preempted one included, they are all-reduce-averaged across the group,
  /// so that validation and the checkpoint that may follow see the same
  /// values on every replica and the saved state reflects every replica's
  /// data (PyTorch's DDP instead broadcasts rank 0's at every forward: one
  /// small all-reduce an epoch costs less and uses all the data).
  result<epoch_metrics> train_epoch();
  /// Loss, accuracy and the operator's metrics over the whole validation
  /// set, by the operator's validation_step() (every replica evaluates all
  /// of it: the parameters are the same everywhere).
  result<epoch_metrics> validate();

  /// A sharded checkpoint in a new directory root/checkpoint_name(
  /// epochs_done(), SEQ) (see checkpoint::begin_save()): every replica
  /// writes its shard of the parameters ("parameters") and the
  /// optimizer state ("optimizer/NAME") in parallel; the chief then writes
  /// the manifest (operator name as trial, epoch, optimizer steps,
  /// `metrics`, the operator's save_state()) and applies retention (keeps
  /// the newest `keep_last`, all when <= 0, plus the best by `best_metric`
  /// when not empty, see options.smaller_is_better; a failed deletion is
  /// only logged). Every replica returns the same outcome: the chief's,
  /// which names the first replica that failed. Saving an epoch again
  /// writes another checkpoint, newer than the first: until it is
  /// published (renamed from its temporary name, after its manifest is
  /// durable), the previous checkpoints stay as they were, and a failed
  /// save removes what it wrote.
  status save(const std::string& root, const std::map<std::string, double>& metrics,
              int keep_last, const std::string& best_metric);
  /// Restores parameters, optimizer state and steps, epoch, the loss
  /// scaler (fp16) and operator state from `path`: a checkpoint directory, or a root whose newest
  /// valid checkpoint is taken (the invalid ones skipped are logged to
  /// stderr). The chief chooses and every replica reads the shards it needs
  /// (any world size may have written them). Every replica returns the same
  /// outcome; errors name the file at fault, or both parameter counts for
  /// another model's checkpoint. After a failure the model's contents are
  /// unspecified: restore again or rebuild.
  status restore(const std::string& path);
  /// Rows [begin, end) of an input set run through the model's forward in
  /// evaluation mode (batch inference; no collectives, so replicas answer
  /// independently): "validation" or "train", the operator's own sets.
  /// Errors: another input name, a range outside the set (both named).
  struct prediction {
    int64_t width = 0;           // outputs per row
    int64_t target_width = 0;    // targets per row
    bool classification = true;  // operator_parts::classification
    std::vector<float> outputs;  // [rows, width], row-major
    std::vector<float> targets;  // [rows, target_width]
  };
  result<prediction> predict(const std::string& input, int64_t begin, int64_t end);
  /// The input set's row count (the same errors as predict()).
  result<int64_t> input_rows(const std::string& input) const;

  /// Live recovery (replica_reform.cpp). A train_epoch() that fails in a
  /// collective (a peer died or hung, or the communicator was aborted)
  /// keeps this replica's model, optimizer, loss scaler and epoch as they
  /// were after the last committed step (an optimizer step the whole group
  /// applied), and its loader position there: the next train_epoch()
  /// trains the epoch on from that step, redoing only the step in flight.
  ///
  /// reform() puts this replica into a new group: `comm` (a communicator
  /// of the new generation; this replica's rank and world size are its
  /// own), the replica's new place on its node, a new gradient sync and a
  /// loader over the new group's shard of the same global order (the
  /// global batch is kept). Model and optimizer are untouched; a
  /// preemption requested of the old group is dropped. Errors name
  /// the replica; after one, reform again or rebuild.
  status reform(std::unique_ptr<comm::communicator> comm, int local_rank, int node_rank);
  /// What synchronize_state() did.
  struct state_sync {
    int source = -1;          // the rank whose state every rank now holds
    int64_t bytes = 0;        // state bytes broadcast (0: all already agreed)
    double seconds = 0;
  };
  /// Collective, right after a group formed (create() for a replacement,
  /// reform() for a survivor): every rank tells where it stands (committed
  /// optimizer steps, epoch, loader position); when they differ, or a rank
  /// has no state of its own yet (a replacement), the most advanced rank
  /// broadcasts its parameters, model buffers, optimizer state, loss
  /// scaler, epoch, loader position and operator state, bit for bit, and
  /// every rank continues from there. Equal ranks move nothing.
  result<state_sync> synchronize_state();
  /// Whether this replica has trained or restored (a replacement built for
  /// a running group has not: synchronize_state() gives it the group's).
  bool has_state() const { return has_state_; }
  /// Optimizer steps the group committed, over all epochs (never goes
  /// back, except through restore()).
  int64_t committed_steps() const;

  /// The checkpoint directory of the last successful save() or restore(),
  /// or "".
  const std::string& last_checkpoint() const { return last_checkpoint_; }

  /// The model's flat parameter buffer. At ZeRO stage 3 only this rank's
  /// parts hold values between passes: see parameter_values().
  const tensor& parameters() const;
  /// The whole parameters, on the host. At stage 3 every bucket is
  /// gathered for it, so every replica of the group must ask at once (the
  /// trainer's parameter_hashes and get_model do).
  result<std::vector<float>> parameter_values();
  /// The model's non-parameter state (nn::model::buffers()).
  const tensor& model_buffers() const;
  int64_t epochs_done() const { return epoch_; }
  int64_t batch_size() const { return batch_size_; }
  /// fp16's loss scaler (disabled, scale 1, for other precisions).
  const loss_scaler& scaler() const { return scaler_; }
  replica_context& context() { return *ctx_; }
  /// The asynchronous checkpoints (options.async_checkpoint), or null when
  /// off or before the first step.
  const async_checkpointer* async_checkpoints() const { return async_.get(); }
  /// Forgets the asynchronous save in flight without a collective (it is
  /// never published): for a group that re-forms after a failure. Every
  /// surviving replica calls it; new ones start without one.
  void abandon_async_checkpoint();
  /// Asks the group to stop at the next should_preempt() (chief only).
  void request_preemption() { preempt_.store(true); }
  bool preemption_requested() const { return preempt_.load(); }

  /// A buffer a checkpoint holds: the whole of `count` elements, or when
  /// `sharded` (ZeRO's optimizer state) only the `owned` ranges (maybe
  /// none), packed in order in `data` (or, not `packed`, each at its own
  /// position in `data` of the whole count: stage 3's parameters).
  struct state_buffer {
    std::string name;
    tensor* data = nullptr;
    int64_t count = 0;
    bool sharded = false;
    std::vector<optim::span> owned;
    bool packed = true;
  };

private:
  replica_runner(const replica_options& options, std::unique_ptr<replica_context> ctx);
  status build();
  /// The parts that depend on the group (its size and this rank): the
  /// batch share, the training loader, the gradient sync, SyncBatchNorm's
  /// reducer. Run by build() and again by reform().
  status build_group();
  /// A loader of batch_size_ batches on this replica's device with
  /// `transforms` (the training or the validation ones).
  data::loader_options loader_options(
      const data::transform_list& transforms) const;
  /// Where this replica stands, for synchronize_state(): committed steps,
  /// epoch, loader position, has_state.
  bytes standing() const;
  /// Receives (or, on `root`, sends) the state synchronize_state() moves.
  result<int64_t> broadcast_state(int root);
  /// One step of the operator's (train_step, or validation_step when
  /// `training` is false), exceptions caught and errors naming the operator.
  result<step_result> run_step(step_context& ctx, bool training);
  /// "replica R, operator 'NAME' train_step" (or validation_step).
  std::string step_error_context(bool training) const;
  /// Hands where the epoch stands to options_.on_progress, or prints it:
  /// `done` batches trained or skipped, the first `resumed_at` of them
  /// skipped (a resumed epoch), `elapsed` seconds since the epoch began.
  void report_progress(int64_t done, int64_t resumed_at, const step_totals& totals,
                       double elapsed) const;
  /// parts_.validation_transforms on `rows` rows of x (a prediction's input,
  /// normalised as validation is).
  void apply_validation_transforms(const data::dataset& set, tensor& x, int64_t rows) const;
  /// The model's non-parameter state (BatchNorm's running statistics),
  /// averaged over the group: see train_epoch().
  status average_model_buffers();
  /// After a synced micro-batch: the loss scaler's check, the clip and the
  /// optimizer's update (of this rank's shard, then gathered, under ZeRO);
  /// whether the optimizer stepped (fp16 skips overflowing steps).
  result<bool> apply_update(float lr);
  /// What the replica holds, from its own accounting (the epoch's
  /// memory.* metrics).
  void report_memory(epoch_metrics& m) const;
  // Checkpoints (replica_checkpoint.cpp).
  std::vector<state_buffer> checkpoint_buffers();
  result<std::vector<bytes>> write_shard(const std::string& dir);
  status commit_checkpoint(const std::string& root, const checkpoint::pending_save& save,
                           const std::vector<bytes>& shards,
                           const std::map<std::string, double>& metrics, int keep_last,
                           const std::string& best_metric);
  status load_checkpoint(const std::string& dir);
  /// The manifest of a checkpoint of the current state, but its shards:
  /// `epoch` epochs done and `resume_position` samples of the next.
  checkpoint::manifest describe_checkpoint(int64_t epoch, int64_t resume_position,
                                           const std::map<std::string, double>& metrics);
  // Asynchronous checkpoints (replica_async_checkpoint.cpp): the hooks of
  // train_epoch(), at a step boundary after the gradient sync and at the
  // end of the epoch, and the snapshot they take.
  status async_checkpoint_step();
  status finish_async_checkpoint();
  status take_snapshot(checkpoint_snapshot& s);
  /// fp16's loss scaler from m's metrics; a checkpoint without them (saved
  /// at another precision) leaves the scaler as created.
  status restore_scaler(const checkpoint::manifest& m);

  replica_options options_;
  std::unique_ptr<replica_context> ctx_;
  std::unique_ptr<training_operator> op_;
  operator_parts parts_;
  std::unique_ptr<data::loader> train_loader_, validation_loader_;
  std::unique_ptr<comm::gradient_sync> sync_;
  std::unique_ptr<zero::parameter_shards> shards_;  // stage 3
  loss_scaler scaler_;
  tensor gather_scratch_;        // ZeRO: the padded bucket's all-gather
  double last_grad_norm_ = 0;    // before clipping, when clipping
  int64_t batch_size_ = 0;
  int64_t epoch_ = 0;
  int64_t resume_position_ = 0;  // samples of epoch_ + 1 the group already trained
  bool has_state_ = false;       // trained, restored or synchronized (synchronize_state)
  std::string last_checkpoint_;
  std::atomic<bool> preempt_{false};
  std::unique_ptr<async_checkpointer> async_;  // last: its writer goes first
};

/// A replica_context over a communicator. The byte collectives pack bytes
/// into float32 tensors and move them with the communicator's broadcast,
/// all_gather and gather, which copy bits exactly on every backend (no
/// float arithmetic: signalling NaN and -0 patterns survive): lengths first
/// (uint32 patterns, all_gathered or broadcast, so that every rank sizes the
/// payload and an oversized value fails every rank together), then the
/// zero-padded payloads. A value may hold at most max_value_bytes.
/// should_preempt() broadcasts the chief's `preempt` flag.
class comm_replica_context final : public replica_context {
public:
  struct placement {
    int local_rank = 0;
    int node_rank = 0;
    device where = device::cpu();
    uint64_t seed = 0;
  };
  comm_replica_context(std::unique_ptr<comm::communicator> comm, placement where,
                       const std::atomic<bool>* preempt);

  /// The largest value all_gather, gather and broadcast carry (metadata,
  /// not tensors).
  static constexpr size_t max_value_bytes = size_t{16} << 20;

  int rank() const override { return comm_->rank(); }
  int world_size() const override { return comm_->size(); }
  int local_rank() const override { return placement_.local_rank; }
  int node_rank() const override { return placement_.node_rank; }
  device where() const override { return placement_.where; }
  uint64_t seed() const override { return placement_.seed; }
  result<std::vector<bytes>> all_gather(const bytes& value) override;
  result<std::vector<bytes>> gather(const bytes& value, int root) override;
  result<bytes> broadcast(const bytes& value, int root) override;
  result<bool> should_preempt() override;
  comm::communicator& communicator() override { return *comm_; }

  /// Where should_preempt() reads the chief's flag (set by the runner).
  void set_preempt_flag(const std::atomic<bool>* flag) { preempt_ = flag; }
  /// Moves this replica to a new group (live recovery): its communicator
  /// and its place on its node (replica_runner::reform()).
  void replace(std::unique_ptr<comm::communicator> comm, int local_rank, int node_rank) {
    comm_ = std::move(comm);
    placement_.local_rank = local_rank;
    placement_.node_rank = node_rank;
  }

private:
  /// Every rank's value length (all_gathered); fails on every rank alike
  /// when one is over max_value_bytes.
  result<std::vector<size_t>> exchange_lengths(const char* op, size_t mine);

  std::unique_ptr<comm::communicator> comm_;
  placement placement_;
  const std::atomic<bool>* preempt_;
};

} // namespace dtrain::train
