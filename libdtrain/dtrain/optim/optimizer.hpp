#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/kernels.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::optim {

/// An element range [begin, begin + count) of a model's flat buffers.
struct span {
  int64_t begin = 0;
  int64_t count = 0;
};

/// Updates a model's flat parameter buffer from its flat gradient buffer
/// (nn::model's contract) in one fused pass, on the buffers' device.
///
/// State (momentum, Adam's moments) is allocated on the first step with the
/// parameters' size and device, and is itself flat, so a checkpoint stores
/// it as a few buffers (state_buffers()) plus the step count. The learning
/// rate is passed to every step, so a schedule stays outside the optimizer.
/// Not thread-safe.
class optimizer {
public:
  virtual ~optimizer() = default;
  virtual std::string name() const = 0;

  /// One update. params and grads must have the same numel and device, and
  /// the same as on every earlier step (an error says what changed).
  status step(tensor& params, const tensor& grads, float lr);

  /// One update of the `owned` ranges of params only, from grads at the
  /// same offsets (a ZeRO shard: zero/sharded_update.hpp). The state then
  /// holds sum(count) elements, the ranges' in their order, so each rank
  /// keeps only its shard's; the update of each element is the same as
  /// step() makes of it. Ranges must lie inside params, not overlap, and
  /// be the same on every call (an error says what changed);
  /// unavailable for an optimizer that cannot update ranges (shardable()).
  status step_owned(tensor& params, const tensor& grads, const std::vector<span>& owned,
                    float lr);
  /// Whether step_owned() works: dtrain's own optimizers; a wrapped
  /// library's that steps its own parameters does not.
  virtual bool shardable() const { return false; }
  /// Whether step_owned() reads and writes the parameters inside the owned
  /// ranges only, so that the rest of them need not be memory during the
  /// step (ZeRO stage 3): dtrain's own optimizers.
  virtual bool shards_parameters() const { return false; }

  int64_t steps() const { return steps_; }
  /// For restoring from a checkpoint; state buffers are restored by writing
  /// into state_buffers() after allocate_state().
  void set_steps(int64_t steps) { steps_ = steps; }
  /// Allocates the state for parameters like `params` (zeros) if not yet.
  void allocate_state(const tensor& params);
  /// Allocates `count` elements of state on `where` (zeros) if not yet: a
  /// shard's (step_owned()).
  void allocate_state(int64_t count, device where);
  /// Named flat state buffers ("momentum"; "exp_avg", "exp_avg_sq"); empty
  /// before the first step or allocate_state().
  virtual std::vector<std::pair<std::string, tensor*>> state_buffers() = 0;

protected:
  virtual std::vector<std::string> state_names() const = 0;
  /// One update of the allocated state; an error (a wrapped library that
  /// failed) leaves steps() unchanged and is returned by step().
  virtual status update(tensor& params, const tensor& grads, float lr) = 0;
  /// One update of a range: params and grads are views of it, `state` views
  /// of the state buffers' matching range (state_names() order). For
  /// step_owned(); only shardable() optimizers implement it.
  virtual status update_range(tensor& params, const tensor& grads, std::vector<tensor>& state,
                              float lr);
  /// step_owned()'s update of the allocated shard state: by default
  /// update_range() of each range; an optimizer that steps its ranges
  /// together (a wrapped library's) overrides it.
  virtual status update_owned(tensor& params, const tensor& grads,
                              const std::vector<span>& owned, float lr);
  std::vector<tensor> state_;
  int64_t steps_ = 0;
};

/// torch.optim.SGD: momentum, dampening, Nesterov, (coupled) weight decay.
struct sgd_options {
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

class sgd final : public optimizer {
public:
  /// Rejects negative values, and Nesterov without momentum or with
  /// dampening (as torch does), naming the field.
  static result<std::unique_ptr<sgd>> create(const sgd_options& options);
  std::string name() const override { return "sgd"; }
  std::vector<std::pair<std::string, tensor*>> state_buffers() override;
  bool shardable() const override { return true; }
  bool shards_parameters() const override { return true; }

private:
  explicit sgd(const sgd_options& options) : options_(options) {}
  std::vector<std::string> state_names() const override;
  status update(tensor& params, const tensor& grads, float lr) override;
  status update_range(tensor& params, const tensor& grads, std::vector<tensor>& state,
                      float lr) override;
  sgd_options options_;
};

/// torch.optim.Adam, or AdamW (decoupled weight decay) when decoupled.
struct adam_options {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;
};

class adam final : public optimizer {
public:
  /// Rejects betas outside [0, 1), eps <= 0 and negative weight decay.
  static result<std::unique_ptr<adam>> create(const adam_options& options);
  std::string name() const override { return options_.decoupled ? "adamw" : "adam"; }
  std::vector<std::pair<std::string, tensor*>> state_buffers() override;
  bool shardable() const override { return true; }
  bool shards_parameters() const override { return true; }

private:
  explicit adam(const adam_options& options) : options_(options) {}
  std::vector<std::string> state_names() const override;
  status update(tensor& params, const tensor& grads, float lr) override;
  status update_range(tensor& params, const tensor& grads, std::vector<tensor>& state,
                      float lr) override;
  adam_options options_;
};

} // namespace dtrain::optim
