// The normalization and embedding kernels of layer_kernels.hpp. The
// reductions (per channel for batch_norm, per row for layer_norm) give one
// block to each channel or row and accumulate in double, as the CPU does;
// only their order of summation differs from the CPU's, so results agree to
// rounding, not bits.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dtrain/cuda/launch.cuh"
#include "dtrain/cuda/layer_kernels.hpp"

namespace dtrain::cuda {

namespace {

using launch::block_size;
using launch::first_index;
using launch::grid_for;
using launch::grid_stride;

// Element k of channel c's batch * spatial values in x [batch, channels, spatial].
__device__ inline int64_t channel_element(int64_t k, int64_t c, int64_t channels,
                                          int64_t spatial) {
  return ((k / spatial) * channels + c) * spatial + k % spatial;
}

// ---- batch_norm -------------------------------------------------------------
//
// The per-channel kernels loop over channels by blockIdx only, so every
// thread of a block reaches every block_sum.

__global__ void bn_channel_sums_kernel(const float* x, const double* shift, int power,
                                       double* sums, int64_t batch, int64_t channels,
                                       int64_t spatial) {
  const int64_t per_channel = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const double s = shift != nullptr ? shift[c] : 0.0;
    double local = 0.0;
    for (int64_t k = threadIdx.x; k < per_channel; k += blockDim.x) {
      const double d = x[channel_element(k, c, channels, spatial)] - s;
      local += power == 2 ? d * d : d;
    }
    const double total = launch::block_sum(local);
    if (threadIdx.x == 0)
      sums[c] = total;
  }
}

__global__ void bn_normalize_kernel(const float* x, const double* mean, const double* inv_std,
                                    const float* weight, const float* bias, float* xhat,
                                    float* y, int64_t batch, int64_t channels,
                                    int64_t spatial) {
  const int64_t n_total = batch * channels * spatial;
  for (int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const int64_t c = (i / spatial) % channels;
    const float v = static_cast<float>((x[i] - mean[c]) * inv_std[c]);
    xhat[i] = v;
    y[i] = v * weight[c] + bias[c];
  }
}

__global__ void bn_grad_sums_kernel(const float* dy, const float* xhat, double* sums,
                                    int64_t batch, int64_t channels, int64_t spatial) {
  const int64_t per_channel = batch * spatial;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t k = threadIdx.x; k < per_channel; k += blockDim.x) {
      const int64_t i = channel_element(k, c, channels, spatial);
      sum_dy += dy[i];
      sum_dy_xhat += static_cast<double>(dy[i]) * xhat[i];
    }
    sum_dy = launch::block_sum(sum_dy);
    sum_dy_xhat = launch::block_sum(sum_dy_xhat);
    if (threadIdx.x == 0) {
      sums[c] = sum_dy;
      sums[channels + c] = sum_dy_xhat;
    }
  }
}

__global__ void bn_param_grads_kernel(const double* sums, float* weight_grad, float* bias_grad,
                                      int64_t channels) {
  for (int64_t c = first_index(); c < channels; c += grid_stride()) {
    bias_grad[c] += static_cast<float>(sums[c]);
    weight_grad[c] += static_cast<float>(sums[channels + c]);
  }
}

__global__ void bn_input_grad_kernel(const float* dy, const float* xhat, const float* weight,
                                     const double* sums, const double* inv_std, double count,
                                     bool batch_statistics, float* dx, int64_t batch,
                                     int64_t channels, int64_t spatial) {
  const int64_t n_total = batch * channels * spatial;
  for (int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const int64_t c = (i / spatial) % channels;
    const double w = weight[c];
    const double g = dy[i] * w;
    // With running statistics the normalization is a fixed affine map.
    dx[i] = batch_statistics
                ? static_cast<float>(inv_std[c] / count *
                                     (count * g - sums[c] * w - xhat[i] * sums[channels + c] * w))
                : static_cast<float>(g * inv_std[c]);
  }
}

// ---- layer_norm -------------------------------------------------------------
//
// One block per row, looping over rows by blockIdx only (see above).

__global__ void ln_forward_kernel(const float* x, const float* weight, const float* bias,
                                  float eps, float* xhat, float* inv_std, float* y,
                                  int64_t rows, int64_t features) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = x + r * features;
    double local = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x)
      local += in[j];
    const double mean = launch::block_sum(local) / static_cast<double>(features);
    local = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x)
      local += (in[j] - mean) * (in[j] - mean);
    const double var = launch::block_sum(local) / static_cast<double>(features);
    const double inv = 1.0 / sqrt(var + eps);
    if (threadIdx.x == 0)
      inv_std[r] = static_cast<float>(inv);
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const float v = static_cast<float>((in[j] - mean) * inv);
      xhat[r * features + j] = v;
      y[r * features + j] = v * weight[j] + bias[j];
    }
  }
}

__global__ void ln_input_grad_kernel(const float* dy, const float* xhat, const float* inv_std,
                                     const float* weight, float* dx, int64_t rows,
                                     int64_t features) {
  const double f = static_cast<double>(features);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* g_out = dy + r * features;
    const float* xh = xhat + r * features;
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const double g = static_cast<double>(g_out[j]) * weight[j];
      sum_g += g;
      sum_gx += g * xh[j];
    }
    sum_g = launch::block_sum(sum_g);
    sum_gx = launch::block_sum(sum_gx);
    const double inv = inv_std[r];
    for (int64_t j = threadIdx.x; j < features; j += blockDim.x) {
      const double g = static_cast<double>(g_out[j]) * weight[j];
      dx[r * features + j] = static_cast<float>(inv / f * (f * g - sum_g - xh[j] * sum_gx));
    }
  }
}

// One thread per feature walks down the rows: neighbouring threads read
// neighbouring columns.
__global__ void ln_param_grads_kernel(const float* dy, const float* xhat, float* weight_grad,
                                      float* bias_grad, int64_t rows, int64_t features) {
  for (int64_t j = first_index(); j < features; j += grid_stride()) {
    float dw = 0.0f, db = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float g = dy[r * features + j];
      dw += g * xhat[r * features + j];
      db += g;
    }
    weight_grad[j] += dw;
    bias_grad[j] += db;
  }
}

// ---- embedding --------------------------------------------------------------

/// The weight row of an index stored as a float, or -1 when it is not a
/// whole number in [0, vocab) (NaN included), as on the CPU.
__device__ inline int64_t embedding_row(float v, int64_t vocab) {
  const bool valid = v >= 0.0f && v < static_cast<float>(vocab) && floorf(v) == v;
  return valid ? static_cast<int64_t>(v) : -1;
}

__global__ void embedding_forward_kernel(const float* index, const float* weight, float* y,
                                         int64_t count, int64_t vocab, int64_t dim) {
  const int64_t n_total = count * dim;
  for (int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const int64_t row = embedding_row(index[i / dim], vocab);
    y[i] = row < 0 ? 0.0f : weight[row * dim + i % dim];
  }
}

__global__ void embedding_backward_kernel(const float* index, const float* dy,
                                          float* weight_grad, int64_t count, int64_t vocab,
                                          int64_t dim) {
  const int64_t n_total = count * dim;
  for (int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const int64_t row = embedding_row(index[i / dim], vocab);
    if (row >= 0)
      atomicAdd(weight_grad + row * dim + i % dim, dy[i]);
  }
}

} // namespace

void batch_norm_channel_sums(const float* x, const double* shift, int power, double* sums,
                             int64_t batch, int64_t channels, int64_t spatial) {
  if (channels <= 0)
    return;
  bn_channel_sums_kernel<<<launch::grid_per_item(channels), block_size>>>(
      x, shift, power, sums, batch, channels, spatial);
  launch::check("batch_norm_channel_sums");
}

void batch_norm_normalize(const float* x, const double* mean, const double* inv_std,
                          const float* weight, const float* bias, float* xhat, float* y,
                          int64_t batch, int64_t channels, int64_t spatial) {
  const int64_t n = batch * channels * spatial;
  if (n <= 0)
    return;
  bn_normalize_kernel<<<grid_for(n), block_size>>>(x, mean, inv_std, weight, bias, xhat, y,
                                                   batch, channels, spatial);
  launch::check("batch_norm_normalize");
}

void batch_norm_grad_sums(const float* dy, const float* xhat, double* sums, int64_t batch,
                          int64_t channels, int64_t spatial) {
  if (channels <= 0)
    return;
  bn_grad_sums_kernel<<<launch::grid_per_item(channels), block_size>>>(dy, xhat, sums, batch,
                                                                       channels, spatial);
  launch::check("batch_norm_grad_sums");
}

void batch_norm_param_grads(const double* sums, float* weight_grad, float* bias_grad,
                            int64_t channels) {
  if (channels <= 0)
    return;
  bn_param_grads_kernel<<<grid_for(channels), block_size>>>(sums, weight_grad, bias_grad,
                                                            channels);
  launch::check("batch_norm_param_grads");
}

void batch_norm_input_grad(const float* dy, const float* xhat, const float* weight,
                           const double* sums, const double* inv_std, double count,
                           bool batch_statistics, float* dx, int64_t batch, int64_t channels,
                           int64_t spatial) {
  const int64_t n = batch * channels * spatial;
  if (n <= 0)
    return;
  bn_input_grad_kernel<<<grid_for(n), block_size>>>(dy, xhat, weight, sums, inv_std, count,
                                                    batch_statistics, dx, batch, channels,
                                                    spatial);
  launch::check("batch_norm_input_grad");
}

void layer_norm_forward(const float* x, const float* weight, const float* bias, float eps,
                        float* xhat, float* inv_std, float* y, int64_t rows,
                        int64_t features) {
  if (rows <= 0 || features <= 0)
    return;
  ln_forward_kernel<<<launch::grid_per_item(rows), block_size>>>(x, weight, bias, eps, xhat,
                                                                 inv_std, y, rows, features);
  launch::check("layer_norm_forward");
}

void layer_norm_backward(const float* dy, const float* xhat, const float* inv_std,
                         const float* weight, float* weight_grad, float* bias_grad, float* dx,
                         int64_t rows, int64_t features) {
  if (rows <= 0 || features <= 0)
    return;
  ln_param_grads_kernel<<<grid_for(features), block_size>>>(dy, xhat, weight_grad, bias_grad,
                                                            rows, features);
  launch::check("layer_norm_backward (parameters)");
  if (dx == nullptr)
    return;
  ln_input_grad_kernel<<<launch::grid_per_item(rows), block_size>>>(dy, xhat, inv_std, weight,
                                                                    dx, rows, features);
  launch::check("layer_norm_backward (input)");
}

void embedding_forward(const float* index, const float* weight, float* y, int64_t count,
                       int64_t vocab, int64_t dim) {
  const int64_t n = count * dim;
  if (n <= 0)
    return;
  embedding_forward_kernel<<<grid_for(n), block_size>>>(index, weight, y, count, vocab, dim);
  launch::check("embedding_forward");
}

void embedding_backward(const float* index, const float* dy, float* weight_grad,
                        int64_t count, int64_t vocab, int64_t dim) {
  const int64_t n = count * dim;
  if (n <= 0)
    return;
  embedding_backward_kernel<<<grid_for(n), block_size>>>(index, dy, weight_grad, count, vocab,
                                                         dim);
  launch::check("embedding_backward");
}

} // namespace dtrain::cuda
