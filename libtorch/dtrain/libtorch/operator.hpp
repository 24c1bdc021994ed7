#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "dtrain/libtorch/module.hpp"
#include "dtrain/libtorch/optimizer.hpp"
#include "dtrain/train/operator.hpp"

namespace dtrain::libtorch {

/// What a torch_operator's build() makes: a libtorch module and what trains
/// it. The replica owns it afterwards.
struct torch_parts {
  /// Required: the module (forward(Tensor) -> Tensor), and one sample's
  /// shape as its forward takes it (module_options::input_shape).
  torch::nn::AnyModule module;
  std::vector<int64_t> input_shape;
  /// One optimizer: libtorch's, built over the module's parameters
  /// (torch_optimizer.hpp says which), or dtrain's (optim/factory.hpp).
  /// Either way dtrain steps it with the schedule's learning rate.
  std::unique_ptr<torch::optim::Optimizer> torch_optimizer;
  std::unique_ptr<optim::optimizer> optimizer;
  /// The loss of a batch in libtorch, from the module's output and the
  /// batch's targets (int64 class indices when `classification`, else the
  /// loader's float32 targets): a scalar mean. When set, the training and
  /// validation steps run it (and count correct predictions from the
  /// output's argmax when `classification`); when empty, dtrain's `loss`
  /// (cross-entropy when that is empty too) runs on the output.
  std::function<at::Tensor(const at::Tensor& output, const at::Tensor& target)> torch_loss;
  std::unique_ptr<nn::loss_function> loss;
  /// Stepped per epoch. Default: constant, at the libtorch optimizer's
  /// learning rate (its first group's), or the config's `lr` (0.01 when
  /// absent) for a dtrain optimizer.
  std::unique_ptr<optim::lr_schedule> schedule;
  std::shared_ptr<const data::dataset> train_data;
  std::shared_ptr<const data::dataset> validation_data;
  bool classification = true;
};

/// A training operator for a libtorch model: the user writes build(), and
/// everything around it is dtrain's (replicas across nodes, the bucketed
/// gradient sync overlapping autograd's backward, fault tolerance, sharded
/// checkpoints, sweeps).
///
/// setup() seeds libtorch with the trainer's seed (torch::manual_seed(ctx.
/// seed()): every replica builds the same module), calls build(), binds the
/// module to a dtrain model (make_model) and wraps a libtorch optimizer
/// (torch_optimizer). Each step sets libtorch's intra-op threads to the
/// replica's share of the host (dtrain::blas_threads()). Checkpoints hold
/// the parameters, float buffers and optimizer state in the sharded files
/// and the module's other buffers in the operator state (save_state()).
///
/// A subclass may override train_step() for its own step: it takes the
/// batch with inputs() / targets(), runs the module (layer().forward_torch),
/// and calls backward() on its loss (which honours ctx.accumulate and the
/// loss scale, and lets the buckets start as autograd produces them).
class torch_operator : public train::training_operator {
public:
  virtual status build(const train::hyperparameters& config, train::replica_context& ctx,
                       torch_parts& parts) = 0;

  status setup(const train::hyperparameters& config, train::replica_context& ctx,
               train::operator_parts& parts) final;
  result<train::step_result> train_step(train::step_context& ctx) override;
  result<train::step_result> validation_step(train::step_context& ctx) override;
  train::bytes save_state() const override;
  status load_state(const train::bytes& state) override;

protected:
  /// The model's adapter layer (valid after setup()).
  module_layer& layer() { return *layer_; }
  /// The batch's inputs as the module takes them, [batch, input_shape...]
  /// (a view of the loader's batch), and its targets (see torch_parts::
  /// torch_loss).
  at::Tensor inputs(const train::step_context& ctx) const;
  at::Tensor targets(const train::step_context& ctx) const;
  /// Backpropagates a scalar loss: overwrites the gradients or adds to
  /// them (ctx.accumulate), multiplied by ctx.loss_scale. Errors: a loss
  /// that is not a finite scalar (numerical_error naming the epoch), or
  /// libtorch's exception.
  status backward(train::step_context& ctx, const at::Tensor& loss);

private:
  module_layer* layer_ = nullptr;
  bool classification_ = true;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> torch_loss_;
};

} // namespace dtrain::libtorch
