#pragma once

#include <cstdint>

#include "dtrain/tensor/precision.hpp"

/// Raw per-device kernels; see kernel_decls.inc for each one's contract.
/// User code calls dtrain::ops (ops.hpp), which checks shapes and picks the
/// device; these are for ops.cpp and for tests that compare devices.
namespace dtrain {

/// Hyperparameters of one SGD step, as torch.optim.SGD defines them:
/// g += weight_decay * p; buf = momentum * buf + (1 - dampening) * g
/// (buf = g on the first step); g = nesterov ? g + momentum * buf : buf;
/// p -= lr * g. momentum_buf may be null when momentum == 0.
struct sgd_hyper {
  float lr = 0.01f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  bool first_step = true;
};

/// Hyperparameters of one Adam step (torch.optim.Adam, or AdamW when
/// decoupled): bias_correction1/2 are 1 - beta^t for step t >= 1.
struct adam_hyper {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;
  float bias_correction1 = 1.0f;
  float bias_correction2 = 1.0f;
};

namespace cpu {
#include "dtrain/tensor/kernel_decls.inc"

/// y[i, j] = f(y[i, j] + bias[j]) in one pass (bias may be null), f ReLU or
/// tanh: a linear layer's epilogue fused with the activation after it.
/// CPU only; ops::bias_activation runs two passes on a GPU.
void bias_activation(float* y, const float* bias, int64_t rows, int64_t cols, bool relu);
} // namespace cpu

namespace cuda {
#include "dtrain/tensor/kernel_decls.inc"
} // namespace cuda

} // namespace dtrain
