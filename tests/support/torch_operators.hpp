#pragma once

#include <torch/torch.h>

#include "dtrain/libtorch/operator.hpp"

/// The libtorch operators the adapter's suites train: "torch_net", a small
/// CNN (conv 1->4, optional BatchNorm, pool, 64->32->5) on a fixed synthetic
/// set of 8x8 "images" labelled by a random linear teacher, so that every
/// run sees the same data. Hyperparameters: samples (512), optimizer (sgd:
/// libtorch's SGD with momentum 0.9; adam: libtorch's Adam; adagrad: its
/// Adagrad, accumulators starting at 0.1; rmsprop: centered RMSprop with
/// momentum 0.5; dtrain_adam: dtrain's), loss (torch: libtorch's cross_entropy in the step; dtrain:
/// dtrain's cross-entropy on the output), batch_norm (0/1), lr (0.05).
namespace dtrain::testing {

struct torch_net_impl : torch::nn::Module {
  explicit torch_net_impl(bool batch_norm);
  at::Tensor forward(at::Tensor x);

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d norm{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE_IMPL(torch_net, torch_net_impl);

/// The synthetic set: `samples` rows of 64 features drawn from `seed`,
/// labelled in [0, 5) by one fixed teacher.
std::pair<at::Tensor, at::Tensor> torch_net_data(int64_t samples, uint64_t seed = 1234);

/// Registers "torch_net" (idempotent).
void register_torch_operators();

} // namespace dtrain::testing
