#pragma once

#include <cstdint>

#include "dtrain/tensor/kernels.hpp"
#include "dtrain/tensor/tensor.hpp"

/// Tensor operations for training MLPs, on the CPU (OpenBLAS and loops) or
/// CUDA (cuBLAS and dtrain's kernels), picked from where the tensors live.
///
/// Preconditions: all tensors of one call on the same device, with the
/// shapes each function states, outputs already allocated. A violation is a
/// bug in the caller (nn checks user-facing shapes and returns errors), so it
/// aborts with the function's name and the shapes. Outputs may not alias
/// inputs unless a function says so. CUDA calls are asynchronous except those
/// that return a value to the host.
namespace dtrain::ops {

/// c = alpha * op(a) op(b) + beta * c for 2-D a, b, c, computed in
/// `compute` (precision.hpp: float32 storage, the GEMM's arithmetic only).
void matmul(const tensor& a, bool trans_a, const tensor& b, bool trans_b, tensor& c,
            float alpha = 1.0f, float beta = 0.0f, precision compute = precision::fp32);

/// y[i, :] += bias for y [rows, cols], bias [cols].
void add_bias(tensor& y, const tensor& bias);
/// out = beta * out + column sums of x [rows, cols]; out [cols].
void sum_rows(const tensor& x, tensor& out, float beta = 0.0f);

enum class activation { relu, gelu, tanh };
const char* to_string(activation kind);
/// y = f(y + bias) for y [rows, cols], bias [cols] or undefined (none), in
/// one pass on the CPU. f is ReLU or tanh only: GELU's backward needs the
/// input this overwrites.
void bias_activation(tensor& y, const tensor& bias, activation kind);

/// y = f(x); y may alias x.
void activation_forward(activation kind, const tensor& x, tensor& y);
/// dx = dy * f'(.), given the forward input x and output y; dx may alias dy.
void activation_backward(activation kind, const tensor& x, const tensor& y,
                         const tensor& dy, tensor& dx);

/// Inverted dropout with probability p in [0, 1): see kernel_decls.inc.
void dropout_forward(const tensor& x, tensor& y, tensor& mask, float p, uint64_t seed);
/// out = a * b elementwise (dropout's backward: dx = dy * mask).
void multiply(const tensor& a, const tensor& b, tensor& out);

/// Mean softmax cross-entropy of logits [rows, cols] against class indices
/// stored as floats in labels [rows]. Writes d(loss)/d(logits) into grad
/// when grad is defined, multiplied by grad_multiplier (a loss scale).
/// row_loss [rows] is scratch on the same device. Returns the mean loss,
/// never multiplied (synchronizes a CUDA device).
float softmax_cross_entropy(const tensor& logits, const tensor& labels, tensor* grad,
                            tensor& row_loss, float grad_multiplier = 1.0f);
/// Mean squared error over all elements of pred and target [rows, cols]
/// (torch.nn.MSELoss()); grad as above. Returns the mean.
float mse(const tensor& pred, const tensor& target, tensor* grad, tensor& row_loss,
          float grad_multiplier = 1.0f);
/// Number of rows of logits [rows, cols] whose first maximum is at labels[i].
int64_t count_correct(const tensor& logits, const tensor& labels, tensor& row_match);

void fill(tensor& x, float value);
void scale(tensor& x, float alpha);
/// y += alpha * x.
void axpy(float alpha, const tensor& x, tensor& y);
/// Sum of all elements, accumulated in double (synchronizes a CUDA device).
double sum(const tensor& x);

/// x *= inv_scale; true when every element of x was finite (no inf, no
/// NaN). found is [1] scratch on x's device. One pass over x; synchronizes
/// a CUDA device to read the flag (4 bytes back, not x).
bool unscale_and_check_finite(tensor& x, float inv_scale, tensor& found);

void sgd_update(tensor& param, const tensor& grad, tensor* momentum_buf,
                const sgd_hyper& h);
void adam_update(tensor& param, const tensor& grad, tensor& m, tensor& v,
                 const adam_hyper& h);

} // namespace dtrain::ops
