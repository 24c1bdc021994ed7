#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "dtrain/libtorch/module.hpp"
#include "dtrain/optim/optimizer.hpp"

namespace dtrain::libtorch {

/// A libtorch optimizer (torch::optim::SGD, Adam, AdamW, RMSprop, Adagrad)
/// stepped by dtrain, over a module bound by make_model().
///
/// step() sets every parameter group's learning rate to dtrain's (the
/// trainer's schedule) and calls the libtorch optimizer's step(), which
/// reads the synced gradients and updates the parameters where they are,
/// in the model's flat buffers. Its state is moved into dtrain's flat
/// state buffers, one per kind ("exp_avg", "exp_avg_sq", "momentum_buffer",
/// ...: libtorch's names) laid out as the parameters are: after libtorch
/// creates a parameter's state (on its first step, so the first step is
/// libtorch's own, e.g. SGD's momentum starting at the gradient) its
/// tensors are copied there and replaced by views. So sharded checkpoints
/// save and restore it like a dtrain optimizer's, into any number of
/// replicas; the per-parameter step counts (Adam's bias correction) are
/// dtrain's steps(). After a restore (steps() > 0, no libtorch state yet)
/// the state is made from the restored buffers before the step.
///
/// Parameter groups may differ in options. Their learning rates keep their
/// ratios: dtrain's rate is the first group's, and group g gets
/// lr * base_g / base_0 (its rate at create() over the first group's), as
/// PyTorch's schedulers scale each group. A parameter the module does not
/// train is an error at create(); an exception from libtorch's step() is
/// returned by step() (internal, with libtorch's message). Not thread-safe.
class torch_optimizer final : public optim::optimizer {
public:
  /// Errors: another optimizer type (naming it and the supported ones), a
  /// parameter in `opt` that is not one of the layer's trainable ones.
  static result<std::unique_ptr<torch_optimizer>> create(
      std::unique_ptr<torch::optim::Optimizer> opt, module_layer& layer);
  ~torch_optimizer() override;

  std::string name() const override { return "libtorch " + type_name_; }
  /// ZeRO: every kind steps a shard, rebuilt over views of its ranges.
  bool shardable() const override { return true; }
  /// The flat state buffers; libtorch state that exists but is not in them
  /// yet (Adagrad makes its state in its constructor) is moved in first,
  /// so that a checkpoint saves it and a restore writes where libtorch
  /// reads.
  std::vector<std::pair<std::string, tensor*>> state_buffers() override;
  torch::optim::Optimizer& wrapped() { return *opt_; }

  enum class kind { sgd, adam, adamw, rmsprop, adagrad };

private:
  torch_optimizer(std::unique_ptr<torch::optim::Optimizer> opt, kind k, std::string type_name);
  std::vector<std::string> state_names() const override { return names_; }
  status update(tensor& params, const tensor& grads, float lr) override;
  /// ZeRO: on the first call, the optimizer is rebuilt over the owned
  /// ranges (cut at parameter boundaries into views of the parameters and
  /// their gradients, each in its parameter's group with that group's
  /// options), its state laid out as the shard's; then update() as ever.
  status update_owned(tensor& params, const tensor& grads, const std::vector<optim::span>& owned,
                      float lr) override;
  status reshard(const std::vector<optim::span>& owned);
  /// Puts parameter i's libtorch state into the flat buffers (homes it), or
  /// makes it from them after a restore.
  void prepare(size_t i, bool after_step);

  std::unique_ptr<torch::optim::Optimizer> opt_;
  kind kind_;
  std::string type_name_;
  std::vector<std::string> names_;        // the flat state buffers, in state_ order
  std::vector<at::Tensor> params_;        // every parameter the optimizer steps
  std::vector<int64_t> offsets_;          // its offset in the flat buffer
  std::vector<std::string> keys_;         // its key in libtorch's state map
  std::vector<char> homed_;
  std::vector<double> base_lrs_;          // each group's rate at create()
  std::vector<size_t> group_of_;          // each parameter's group
  bool sharded_ = false;                  // reshard() has run
};

} // namespace dtrain::libtorch
