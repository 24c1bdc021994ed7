#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/data/transform.hpp"
#include "dtrain/data/loader.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/lr_schedule.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/train/hyperparameters.hpp"

namespace dtrain::comm {
class gradient_sync;
}

namespace dtrain::train {

using bytes = std::vector<char>;

/// What user code on a replica knows and can do (Determined's distributed
/// context): its place in the group, small collectives on serialized
/// values, and synchronized preemption. Owned by the replica; valid for the
/// replica's lifetime; called from the replica's thread only.
class replica_context {
public:
  virtual ~replica_context() = default;

  virtual int rank() const = 0;          // 0 is the chief
  virtual int world_size() const = 0;
  virtual int local_rank() const = 0;    // among the replicas on this node
  virtual int node_rank() const = 0;     // index of this replica's node
  virtual device where() const = 0;      // where the model lives
  virtual uint64_t seed() const = 0;     // the trainer's seed (same on all)

  /// Every replica's value, in rank order.
  virtual result<std::vector<bytes>> all_gather(const bytes& value) = 0;
  /// Every replica's value at root (an empty vector elsewhere).
  virtual result<std::vector<bytes>> gather(const bytes& value, int root) = 0;
  /// root's value on every replica.
  virtual result<bytes> broadcast(const bytes& value, int root) = 0;
  /// True on every replica or on none: the chief's answer (whether the
  /// trainer asked the group to stop), broadcast to all.
  virtual result<bool> should_preempt() = 0;

  /// The group's gradient communicator.
  virtual comm::communicator& communicator() = 0;
};

/// What an operator's setup() builds. The replica owns it afterwards.
/// Required: model, optimizer, loss, train_data. validation_data is
/// optional (validate() then reports nothing); schedule defaults to a
/// constant rate: `lr`, or optim::default_learning_rate without one.
struct operator_parts {
  std::unique_ptr<nn::model> model;
  std::unique_ptr<optim::optimizer> optimizer;
  std::unique_ptr<optim::lr_schedule> schedule;  // stepped per epoch
  std::unique_ptr<nn::loss_function> loss;
  std::shared_ptr<const data::dataset> train_data;
  std::shared_ptr<const data::dataset> validation_data;
  bool classification = true;  // count accuracy against class-index targets
  /// BatchNorm layers normalize by the statistics of the whole group's
  /// batch (torch.nn.SyncBatchNorm), reduced over the group's communicator,
  /// instead of each replica's own.
  bool sync_batch_norm = false;
  /// Applied to every training sample in the loader's workers, seeded per
  /// (epoch, sample) (data/transform.hpp); validation samples get
  /// validation_transforms (normalisation only, typically).
  data::transform_list train_transforms;
  data::transform_list validation_transforms;
  /// Loader threads that read, decode and transform ahead (more for data
  /// decoded from files, as images are).
  int loader_workers = 1;
  /// For training data streamed from shard files: the first sample of each
  /// shard and the shuffle buffer in samples (data::shard_options'
  /// block_starts and window), so that an epoch reads a few shards at a
  /// time. Empty: one permutation of the whole set.
  std::vector<int64_t> train_block_starts;
  int64_t shuffle_window = 0;
};

/// One named metric of one batch, reported by a step beside its loss: the
/// batch's `value` as a mean over `weight` items (the batch's samples, or
/// whatever the metric averages over; weight > 0). Over an epoch the
/// framework reports sum(value * weight) / sum(weight), the sums taken over
/// every batch of every replica (with average_training_metrics; else over
/// this replica's): a per-sample mean when weight is the batch size.
///
/// Names are letters, digits and '_', and none that is_reserved_metric()
/// (below) names: the trainer, the tuner and the experiment store show a
/// training metric as NAME and a validation metric as validation_NAME,
/// beside the built-in loss, accuracy, validation_loss, validation_accuracy.
struct step_metric {
  std::string name;
  double value = 0;
  double weight = 0;
};

/// Whether `name` is one the trainer reports itself with every epoch, so
/// no operator metric may take it: loss, accuracy, lr, samples_per_second,
/// step_seconds, allreduce_seconds, restarts, and any validation_*.
bool is_reserved_metric(const std::string& name);
/// The names above, comma-separated, for messages.
std::string reserved_metric_names();

/// What a step reports about its batch.
struct step_result {
  double loss = 0;                   // the batch's mean loss (must be finite)
  int64_t correct = -1;              // correct predictions, or -1: not counted
  std::vector<step_metric> metrics;  // extra metrics (empty: nothing allocated)
};

/// What one training or validation step works on; built by the replica for
/// each batch, valid only during the call.
struct step_context {
  nn::model& model;            // the replica's model (parts.model)
  const data::batch& batch;    // this replica's batch, on the model's device
  nn::loss_function& loss;     // parts.loss
  replica_context& replica;
  nn::accuracy_counter& accuracy;  // scratch for counting, reused across batches
  int64_t epoch = 0;           // training: the epoch being trained (1-based);
                               // validation: the epochs completed
  bool classification = true;  // parts.classification
  /// Training only: pass to model.backward(). False: overwrite gradients()
  /// (the first micro-batch after an optimizer step); true: add into them
  /// (aggregation_frequency > 1).
  bool accumulate = false;
  comm::gradient_sync* sync = nullptr;  // the framework's; null in validation
  /// The model's output for this batch, set by the standard steps, so that
  /// an override calling one can add a metric without a second forward.
  const tensor* output = nullptr;
  /// Training only: what the loss's gradient must be multiplied by, the
  /// current loss scale of fp16 training (loss_scaler.hpp; 1 for every
  /// other precision) times the batch's weight (data::batch::weight: 1
  /// unless the epoch's short last step splits unevenly). The framework has already passed it to `loss`
  /// (loss_function::set_grad_multiplier), so a gradient from loss.grad() is
  /// scaled; a step that computes its loss gradient otherwise multiplies it
  /// by this. Never multiply the reported loss. The
  /// framework divides the synced gradient by the loss scale before the optimizer, and
  /// skips the optimizer step when that gradient is not finite.
  float loss_scale = 1.0f;

  /// Holds this step's gradient sync until the step returns: buckets that
  /// backward() reports ready are then all-reduced after the step instead of
  /// during backward. A step calls it BEFORE its first backward() when it
  /// changes gradients() after a backward() (an extra term added by hand)
  /// or calls backward() more than once; otherwise a bucket already being
  /// reduced could be written meanwhile. Costs the overlap of communication
  /// with backward for this step. invalid_argument when a bucket was
  /// already launched in this step; a no-op in validation.
  status hold_gradient_sync();
};

/// The user's extension point (Ray's TrainingOperator): build the model,
/// optimizer, loss and data of one replica from a config and the replica
/// context; optionally replace the training step and the validation step
/// of one batch, and carry extra state in checkpoints.
///
/// Every replica of a group creates its own operator and calls setup() with
/// the same hyperparameters; setup() must build identical models (use
/// ctx.seed()). Errors are returned, never thrown: an exception escaping an
/// operator is caught by the replica and reported as an internal error.
///
/// What the framework does around the steps (replica_runner): it shards
/// the training data across the replicas and builds the batches (each
/// replica's share of the global batch); per training batch it begins the
/// gradient sync's micro-batch (deciding `accumulate`), calls train_step(),
/// then finishes the sync: gradients() is averaged over the replicas, in
/// buckets that backward()'s gradient-ready hook starts as each layer is
/// done, and every bucket not reported by then (a step that wrote
/// gradients() itself, without backward()) is reduced at the end, so a
/// step may write its gradient either way (see hold_gradient_sync()). With
/// fp16 precision it then unscales the synced gradient, or skips the step
/// when it is not finite (step_context::loss_scale). Then it steps the
/// optimizer with the schedule's lr (every aggregation_frequency batches),
/// checks for preemption, and at the end of
/// the epoch sums loss, correct predictions and the step's metrics over the
/// replicas (one all-reduce; one more all_gather and all-reduce when a step
/// reported metrics). validate() runs validation_step() over the whole
/// validation set on every replica (no gradients, no sync). Checkpoints
/// hold the model, the optimizer and save_state().
///
/// An error returned (or an exception thrown) by a step ends the epoch on
/// that replica and is reported naming the replica, the operator and the
/// step; replicas that did not fail alike fail when their next collective
/// times out. The group is then restored or rebuilt (as the trainer does),
/// not trained on.
class training_operator {
public:
  virtual ~training_operator() = default;

  virtual status setup(const hyperparameters& config, replica_context& ctx,
                       operator_parts& parts) = 0;

  /// One training batch: forward in training mode, the loss, and its
  /// gradient with respect to the parameters into ctx.model.gradients()
  /// (through backward(grad, ctx.accumulate), or written directly, honouring
  /// ctx.accumulate). Must not step the optimizer. The default is
  /// standard_train_step().
  virtual result<step_result> train_step(step_context& ctx);
  /// One validation batch: forward in evaluation mode, the loss, and any
  /// metrics; no gradients. The default is standard_validation_step().
  virtual result<step_result> validation_step(step_context& ctx);

  /// Extra state for checkpoints (e.g. a running statistic); empty by default.
  virtual bytes save_state() const { return {}; }
  virtual status load_state(const bytes& state) { return status::ok(); }

  /// The train_step() in flight did not commit: its gradient sync (or a
  /// collective after it) failed, and live recovery trains that batch
  /// again in the re-formed group (replica.hpp). An operator that keeps
  /// something per step (a log, a running sum) drops that step's share
  /// here. Called on the training thread; the default does nothing.
  virtual void step_abandoned() {}
};

/// The built-in training step, for overrides to build on: forward
/// (training), loss with its gradient (multiplied by ctx.loss_scale), a
/// non-finite loss is a
/// numerical_error naming the epoch, correct predictions
/// counted when ctx.classification, backward(loss.grad(), ctx.accumulate).
/// Sets ctx.output.
result<step_result> standard_train_step(step_context& ctx);
/// The built-in validation step: forward (evaluation), loss, a non-finite
/// loss is a numerical_error naming the loss, correct predictions counted
/// when ctx.classification. Sets ctx.output.
result<step_result> standard_validation_step(step_context& ctx);

using operator_factory = std::function<std::unique_ptr<training_operator>()>;

/// Registers a factory under `name` (process-wide; later registrations of a
/// name replace earlier ones). Thread-safe.
void register_operator(const std::string& name, operator_factory factory);
/// A new operator of a registered name, or not_found naming it and listing
/// the registered names.
result<std::unique_ptr<training_operator>> make_operator(const std::string& name);
std::vector<std::string> registered_operators();

/// Registers at static-initialization time:
///   static dtrain::train::operator_registration reg("my_op", [] { return ...; });
struct operator_registration {
  operator_registration(const std::string& name, operator_factory factory) {
    register_operator(name, std::move(factory));
  }
};

} // namespace dtrain::train
