#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/lr_schedule.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/train/hyperparameters.hpp"

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
/// optional (validate() then reports nothing); schedule defaults to the
/// optimizer's constant rate given by `lr`.
struct operator_parts {
  std::unique_ptr<nn::model> model;
  std::unique_ptr<optim::optimizer> optimizer;
  std::unique_ptr<optim::lr_schedule> schedule;  // stepped per epoch
  std::unique_ptr<nn::loss_function> loss;
  std::shared_ptr<const data::dataset> train_data;
  std::shared_ptr<const data::dataset> validation_data;
  bool classification = true;  // count accuracy against class-index targets
};

/// The user's extension point (Ray's TrainingOperator): build the model,
/// optimizer, loss and data of one replica from a config and the replica
/// context; optionally customize one batch of training or validation and
/// carry extra state in checkpoints. The framework shards the data, runs
/// the epoch loop, synchronizes gradients and aggregates metrics.
///
/// Every replica of a group creates its own operator and calls setup() with
/// the same hyperparameters; setup() must build identical models (use
/// ctx.seed()). Errors are returned, never thrown: an exception escaping an
/// operator is caught by the replica and reported as an internal error.
class training_operator {
public:
  virtual ~training_operator() = default;

  virtual status setup(const hyperparameters& config, replica_context& ctx,
                       operator_parts& parts) = 0;

  /// Extra state for checkpoints (e.g. a running statistic); empty by default.
  virtual bytes save_state() const { return {}; }
  virtual status load_state(const bytes& state) { return status::ok(); }
};

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
