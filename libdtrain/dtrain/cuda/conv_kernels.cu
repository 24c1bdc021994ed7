// The convolution and pooling kernels of layer_kernels.hpp. One thread per
// output element (grid-stride, 64-bit indices); each follows the CPU loop of
// nn/conv_kernels_cpu.cpp for its element, so the results agree with it to
// rounding (the pools exactly, but for the order of the backward's sums).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dtrain/cuda/launch.cuh"
#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::cuda {

namespace {

using launch::block_size;
using launch::first_index;
using launch::grid_for;
using launch::grid_stride;

// ---- convolution ------------------------------------------------------------

__global__ void im2col_kernel(window2d g, const float* x, float* col) {
  const int64_t positions = g.out_h * g.out_w;
  const int64_t cols = g.batch * positions;
  const int64_t taps = g.kernel_h * g.kernel_w;
  const int64_t n_total = g.channels * taps * cols;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const int64_t row = idx / cols, column = idx % cols;
    const int64_t n = column / positions, p = column % positions;
    const int64_t c = row / taps, tap = row % taps;
    const int64_t ih = (p / g.out_w) * g.stride_h - g.pad_h + (tap / g.kernel_w) * g.dilation_h;
    const int64_t iw = (p % g.out_w) * g.stride_w - g.pad_w + (tap % g.kernel_w) * g.dilation_w;
    const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
    col[idx] = inside ? x[((n * g.channels + c) * g.in_h + ih) * g.in_w + iw] : 0.0f;
  }
}

// The output index along one axis whose tap `k` reads input `i`, or -1:
// i = o * stride - pad + k * dilation.
__device__ inline int64_t tap_source(int64_t i, int64_t k, int64_t stride, int64_t pad,
                                     int64_t dilation, int64_t out) {
  const int64_t t = i + pad - k * dilation;
  if (t < 0 || t % stride != 0)
    return -1;
  const int64_t o = t / stride;
  return o < out ? o : -1;
}

__global__ void col2im_kernel(window2d g, const float* col, float* x) {
  const int64_t positions = g.out_h * g.out_w;
  const int64_t cols = g.batch * positions;
  const int64_t n_total = g.batch * g.channels * g.in_h * g.in_w;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const int64_t w = idx % g.in_w, h = (idx / g.in_w) % g.in_h;
    const int64_t c = (idx / (g.in_w * g.in_h)) % g.channels;
    const int64_t n = idx / (g.in_w * g.in_h * g.channels);
    float total = 0.0f;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t oh = tap_source(h, i, g.stride_h, g.pad_h, g.dilation_h, g.out_h);
      if (oh < 0)
        continue;
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t ow = tap_source(w, j, g.stride_w, g.pad_w, g.dilation_w, g.out_w);
        if (ow < 0)
          continue;
        const int64_t row = (c * g.kernel_h + i) * g.kernel_w + j;
        total += col[row * cols + n * positions + oh * g.out_w + ow];
      }
    }
    x[idx] = total;
  }
}

__global__ void channels_to_batch_kernel(const float* src, const float* bias, float* dst,
                                         int64_t batch, int64_t channels, int64_t positions) {
  const int64_t n_total = batch * channels * positions;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const int64_t p = idx % positions, c = (idx / positions) % channels;
    const int64_t n = idx / (positions * channels);
    const float v = src[(c * batch + n) * positions + p];
    dst[idx] = bias != nullptr ? v + bias[c] : v;
  }
}

__global__ void batch_to_channels_kernel(const float* src, float* dst, int64_t batch,
                                         int64_t channels, int64_t positions) {
  const int64_t n_total = batch * channels * positions;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const int64_t p = idx % positions, n = (idx / positions) % batch;
    const int64_t c = idx / (positions * batch);
    dst[idx] = src[(n * channels + c) * positions + p];
  }
}

// One block per channel; the loops over channels depend only on blockIdx, so
// every thread of a block reaches every block_sum.
__global__ void channel_sums_kernel(const float* x, float* out, int64_t batch, int64_t channels,
                                    int64_t positions, float beta) {
  const int64_t per_channel = batch * positions;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    float local = 0.0f;
    for (int64_t k = threadIdx.x; k < per_channel; k += blockDim.x)
      local += x[((k / positions) * channels + c) * positions + k % positions];
    const float total = launch::block_sum(local);
    if (threadIdx.x == 0)
      out[c] = beta == 0.0f ? total : beta * out[c] + total;
  }
}

// ---- pooling ----------------------------------------------------------------

// Output element idx of a pool over g: its sample, channel and window origin.
struct pool_window {
  int64_t n, c, h0, w0;
};

__device__ inline pool_window window_of(const window2d& g, int64_t idx) {
  const int64_t ow = idx % g.out_w, oh = (idx / g.out_w) % g.out_h;
  const int64_t c = (idx / (g.out_w * g.out_h)) % g.channels;
  const int64_t n = idx / (g.out_w * g.out_h * g.channels);
  return {n, c, oh * g.stride_h - g.pad_h, ow * g.stride_w - g.pad_w};
}

__global__ void max_pool_kernel(window2d g, const float* x, float* y, int64_t* argmax) {
  const int64_t n_total = g.batch * g.channels * g.out_h * g.out_w;
  const int64_t image = g.channels * g.in_h * g.in_w;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const pool_window win = window_of(g, idx);
    const float* sample = x + win.n * image;
    float best = -INFINITY;
    int64_t where = -1;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t ih = win.h0 + i * g.dilation_h;
      if (ih < 0 || ih >= g.in_h)
        continue;
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t iw = win.w0 + j * g.dilation_w;
        if (iw < 0 || iw >= g.in_w)
          continue;
        const int64_t at = (win.c * g.in_h + ih) * g.in_w + iw;
        const float v = sample[at];
        // The first NaN wins, as on the CPU (and in PyTorch).
        if (where < 0 || v > best || (isnan(v) && !isnan(best))) {
          best = v;
          where = at;
        }
      }
    }
    y[idx] = best;
    argmax[idx] = where;
  }
}

__global__ void max_pool_backward_kernel(window2d g, const float* dy, const int64_t* argmax,
                                         float* dx) {
  const int64_t n_total = g.batch * g.channels * g.out_h * g.out_w;
  const int64_t outputs = g.channels * g.out_h * g.out_w;
  const int64_t image = g.channels * g.in_h * g.in_w;
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride())
    if (argmax[idx] >= 0)
      atomicAdd(dx + (idx / outputs) * image + argmax[idx], dy[idx]);
}

__global__ void avg_pool_kernel(window2d g, const float* x, float* y) {
  const int64_t n_total = g.batch * g.channels * g.out_h * g.out_w;
  const float inv = 1.0f / static_cast<float>(g.kernel_h * g.kernel_w);
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const pool_window win = window_of(g, idx);
    const float* plane = x + (win.n * g.channels + win.c) * g.in_h * g.in_w;
    float total = 0.0f;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t ih = win.h0 + i * g.dilation_h;
      if (ih < 0 || ih >= g.in_h)
        continue;
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t iw = win.w0 + j * g.dilation_w;
        if (iw >= 0 && iw < g.in_w)
          total += plane[ih * g.in_w + iw];
      }
    }
    y[idx] = total * inv;
  }
}

__global__ void avg_pool_backward_kernel(window2d g, const float* dy, float* dx) {
  const int64_t n_total = g.batch * g.channels * g.out_h * g.out_w;
  const float inv = 1.0f / static_cast<float>(g.kernel_h * g.kernel_w);
  for (int64_t idx = first_index(); idx < n_total; idx += grid_stride()) {
    const pool_window win = window_of(g, idx);
    float* plane = dx + (win.n * g.channels + win.c) * g.in_h * g.in_w;
    const float share = dy[idx] * inv;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      const int64_t ih = win.h0 + i * g.dilation_h;
      if (ih < 0 || ih >= g.in_h)
        continue;
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t iw = win.w0 + j * g.dilation_w;
        if (iw >= 0 && iw < g.in_w)
          atomicAdd(plane + ih * g.in_w + iw, share);
      }
    }
  }
}

int64_t input_numel(const window2d& g) { return g.batch * g.channels * g.in_h * g.in_w; }
int64_t output_numel(const window2d& g) { return g.batch * g.channels * g.out_h * g.out_w; }

} // namespace

void im2col(const window2d& g, const float* x, float* col) {
  const int64_t n = g.channels * g.kernel_h * g.kernel_w * g.batch * g.out_h * g.out_w;
  if (n <= 0)
    return;
  im2col_kernel<<<grid_for(n), block_size>>>(g, x, col);
  launch::check("im2col");
}

void col2im(const window2d& g, const float* col, float* x) {
  const int64_t n = input_numel(g);
  if (n <= 0)
    return;
  col2im_kernel<<<grid_for(n), block_size>>>(g, col, x);
  launch::check("col2im");
}

void channels_to_batch(const float* src, const float* bias, float* dst, int64_t batch,
                       int64_t channels, int64_t positions) {
  const int64_t n = batch * channels * positions;
  if (n <= 0)
    return;
  channels_to_batch_kernel<<<grid_for(n), block_size>>>(src, bias, dst, batch, channels,
                                                        positions);
  launch::check("channels_to_batch");
}

void batch_to_channels(const float* src, float* dst, int64_t batch, int64_t channels,
                       int64_t positions) {
  const int64_t n = batch * channels * positions;
  if (n <= 0)
    return;
  batch_to_channels_kernel<<<grid_for(n), block_size>>>(src, dst, batch, channels, positions);
  launch::check("batch_to_channels");
}

void channel_sums(const float* x, float* out, int64_t batch, int64_t channels,
                  int64_t positions, float beta) {
  if (channels <= 0)
    return;
  channel_sums_kernel<<<launch::grid_per_item(channels), block_size>>>(x, out, batch, channels,
                                                                       positions, beta);
  launch::check("channel_sums");
}

void max_pool(const window2d& g, const float* x, float* y, int64_t* argmax) {
  const int64_t n = output_numel(g);
  if (n <= 0)
    return;
  max_pool_kernel<<<grid_for(n), block_size>>>(g, x, y, argmax);
  launch::check("max_pool");
}

void max_pool_backward(const window2d& g, const float* dy, const int64_t* argmax, float* dx) {
  if (input_numel(g) <= 0)
    return;
  fill(dx, input_numel(g), 0.0f);
  const int64_t n = output_numel(g);
  if (n <= 0)
    return;
  max_pool_backward_kernel<<<grid_for(n), block_size>>>(g, dy, argmax, dx);
  launch::check("max_pool_backward");
}

void avg_pool(const window2d& g, const float* x, float* y) {
  const int64_t n = output_numel(g);
  if (n <= 0)
    return;
  avg_pool_kernel<<<grid_for(n), block_size>>>(g, x, y);
  launch::check("avg_pool");
}

void avg_pool_backward(const window2d& g, const float* dy, float* dx) {
  if (input_numel(g) <= 0)
    return;
  fill(dx, input_numel(g), 0.0f);
  const int64_t n = output_numel(g);
  if (n <= 0)
    return;
  avg_pool_backward_kernel<<<grid_for(n), block_size>>>(g, dy, dx);
  launch::check("avg_pool_backward");
}

} // namespace dtrain::cuda
