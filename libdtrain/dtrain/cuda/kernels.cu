// The CUDA versions of the raw kernels in tensor/kernel_decls.inc (all but
// gemm, which is in blas.cpp). Each host function returns at once for an
// empty input, else launches one kernel on the current device's default
// stream, checks the launch and returns without waiting: a fault inside a
// kernel shows at the next cuda::synchronize().
//
// Every kernel loops grid-stride with 64-bit indices, so the grid is capped
// and any size works. Results follow the CPU kernels' formulas; the order of
// summation in the reductions differs, so sums agree to rounding, not bits.
// Dropout masks come from the same hash as on the CPU and agree bit for bit.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "dtrain/core/random.hpp"
#include "dtrain/cuda/check.hpp"
#include "dtrain/cuda/launch.cuh"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::cuda {

namespace {

using launch::block_size;
using launch::first_index;
using launch::grid_for;
using launch::grid_stride;
using launch::warp;
constexpr auto check_launch = launch::check;

// ---- elementwise --------------------------------------------------------

__global__ void add_bias_kernel(float* y, const float* bias, int64_t n, int64_t cols) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] += bias[i % cols];
}

__global__ void relu_forward_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f; // NaN gives 0, as on the CPU
  }
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

constexpr float inv_sqrt2 = 0.70710678118654752440f;
constexpr float inv_sqrt_2pi = 0.39894228040143267794f;

__global__ void gelu_forward_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * inv_sqrt2));
  }
}

__global__ void gelu_backward_kernel(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + erff(v * inv_sqrt2));
    float pdf = inv_sqrt_2pi * expf(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

__global__ void tanh_forward_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] = tanhf(x[i]);
}

__global__ void tanh_backward_kernel(const float* y, const float* dy, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = y[i];
    dx[i] = dy[i] * (1.0f - v * v);
  }
}

__global__ void dropout_kernel(const float* x, float* y, float* mask, int64_t n, float p,
                               float keep_scale, uint64_t seed) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    // Kept when the draw is >= p: the CPU's rule, so the masks match bitwise.
    float mi = uniform01(seed, static_cast<uint64_t>(i)) >= p ? keep_scale : 0.0f;
    mask[i] = mi;
    y[i] = x[i] * mi;
  }
}

__global__ void multiply_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = a[i] * b[i];
}

__global__ void fill_kernel(float* x, int64_t n, float value) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    x[i] = value;
}

__global__ void scale_kernel(float* x, int64_t n, float alpha) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    x[i] *= alpha;
}

__global__ void axpy_kernel(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    y[i] += alpha * x[i];
}

// ---- optimizers ---------------------------------------------------------

__global__ void sgd_kernel(float* param, const float* grad, float* buf, int64_t n,
                           sgd_hyper h) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float p = param[i];
    float g = grad[i];
    if (h.weight_decay != 0.0f)
      g += h.weight_decay * p;
    if (h.momentum != 0.0f) {
      float b = h.first_step ? g : h.momentum * buf[i] + (1.0f - h.dampening) * g;
      buf[i] = b;
      g = h.nesterov ? g + h.momentum * b : b;
    }
    param[i] = p - h.lr * g;
  }
}

/// step_size = lr / bias_correction1, bc2_sqrt = sqrt(bias_correction2).
__global__ void adam_kernel(float* param, const float* grad, float* m, float* v, int64_t n,
                            adam_hyper h, float step_size, float bc2_sqrt) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float p = param[i];
    float g = grad[i];
    if (h.weight_decay != 0.0f) {
      if (h.decoupled)
        p *= 1.0f - h.lr * h.weight_decay;
      else
        g += h.weight_decay * p;
    }
    float mi = h.beta1 * m[i] + (1.0f - h.beta1) * g;
    float vi = h.beta2 * v[i] + (1.0f - h.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = p - step_size * mi / (sqrtf(vi) / bc2_sqrt + h.eps);
  }
}

// ---- row reductions -------------------------------------------------------
//
// One block per row (grid-stride over rows). The block size is a multiple of
// the warp size, so every warp is full and the shuffles can name all lanes;
// the loops over rows depend only on blockIdx, so every thread of a block
// reaches every __syncthreads().

struct max_op {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct sum_op {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/// Combines v over the block; every thread gets the result. `scratch` holds
/// one float per warp; the leading __syncthreads() makes back-to-back calls
/// with the same scratch safe.
template <class Op>
__device__ float block_reduce(float v, Op op, float* scratch) {
  for (int offset = warp / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();
  if (threadIdx.x % warp == 0)
    scratch[threadIdx.x / warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (unsigned w = 1; w < blockDim.x / warp; ++w)
    r = op(r, scratch[w]);
  return r;
}

/// The class index of a label stored as a float, or -1 when it is not a
/// whole number in [0, cols) (NaN included), as on the CPU.
__device__ inline int64_t label_index(float label, int64_t cols) {
  bool valid = label >= 0.0f && label < static_cast<float>(cols) && floorf(label) == label;
  return valid ? static_cast<int64_t>(label) : -1;
}

__global__ void softmax_xent_kernel(const float* logits, const float* labels, float* grad,
                                    float* row_loss, int64_t rows, int64_t cols,
                                    float grad_scale) {
  __shared__ float scratch[block_size / warp];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = logits + r * cols;
    float local_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      local_max = fmaxf(local_max, x[j]);
    float row_max = block_reduce(local_max, max_op{}, scratch);
    float local_sum = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      local_sum += expf(x[j] - row_max);
    float sum = block_reduce(local_sum, sum_op{}, scratch);
    int64_t label = label_index(labels[r], cols);
    if (threadIdx.x == 0)
      row_loss[r] = label < 0 ? NAN : logf(sum) - (x[label] - row_max);
    if (grad == nullptr)
      continue;
    float* g = grad + r * cols;
    float inv_sum = 1.0f / sum;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float softmax = expf(x[j] - row_max) * inv_sum;
      g[j] = label < 0 ? NAN : grad_scale * (softmax - (j == label ? 1.0f : 0.0f));
    }
  }
}

__global__ void squared_error_kernel(const float* pred, const float* target, float* grad,
                                     float* row_loss, int64_t rows, int64_t cols,
                                     float grad_scale) {
  __shared__ float scratch[block_size / warp];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float local = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      int64_t i = r * cols + j;
      float d = pred[i] - target[i];
      local += d * d;
      if (grad != nullptr)
        grad[i] = grad_scale * 2.0f * d;
    }
    float total = block_reduce(local, sum_op{}, scratch);
    if (threadIdx.x == 0)
      row_loss[r] = total;
  }
}

/// (value, index) of the first maximum: a larger value wins, a tie goes to
/// the smaller index.
__device__ inline void take_first_max(float& best, int64_t& at, float v, int64_t j) {
  if (v > best || (v == best && j < at)) {
    best = v;
    at = j;
  }
}

__global__ void argmax_matches_kernel(const float* logits, const float* labels,
                                      float* row_match, int64_t rows, int64_t cols) {
  __shared__ float best_scratch[block_size / warp];
  __shared__ int64_t at_scratch[block_size / warp];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = logits + r * cols;
    // A thread with no element holds (-inf, cols), which loses every tie.
    float best = -INFINITY;
    int64_t at = cols;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      take_first_max(best, at, x[j], j);
    for (int offset = warp / 2; offset > 0; offset /= 2) {
      float v = __shfl_xor_sync(0xffffffffu, best, offset);
      long long j = __shfl_xor_sync(0xffffffffu, static_cast<long long>(at), offset);
      take_first_max(best, at, v, j);
    }
    __syncthreads();
    if (threadIdx.x % warp == 0) {
      best_scratch[threadIdx.x / warp] = best;
      at_scratch[threadIdx.x / warp] = at;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (unsigned w = 1; w < blockDim.x / warp; ++w)
        take_first_max(best, at, best_scratch[w], at_scratch[w]);
      // NaN never wins above, except that the CPU's scan starts from column
      // 0 and nothing compares greater than a NaN there.
      if (cols > 0 && isnan(x[0]))
        at = 0;
      int64_t label = label_index(labels[r], cols);
      row_match[r] = label >= 0 && label == at ? 1.0f : 0.0f;
    }
  }
}

/// Threads per row for a row of `cols`: enough to cover short rows (the
/// 10-class output) without idle warps, a multiple of the warp size.
unsigned row_block(int64_t cols) {
  unsigned threads = warp;
  while (threads < block_size && threads < cols)
    threads *= 2;
  return threads;
}

unsigned row_grid(int64_t rows) {
  constexpr int64_t max_row_blocks = 65535;
  return static_cast<unsigned>(rows < max_row_blocks ? rows : max_row_blocks);
}

// ---- column sums ------------------------------------------------------------

constexpr int sum_cols_per_block = 32;
constexpr int sum_row_lanes = 8;

/// A block covers 32 adjacent columns with 8 row lanes each (coalesced
/// reads along a row), then folds the 8 partial sums in shared memory.
__global__ void sum_rows_kernel(const float* x, float* out, int64_t rows, int64_t cols,
                                float beta) {
  __shared__ float partial[sum_row_lanes][sum_cols_per_block + 1];
  for (int64_t col0 = static_cast<int64_t>(blockIdx.x) * sum_cols_per_block; col0 < cols;
       col0 += static_cast<int64_t>(gridDim.x) * sum_cols_per_block) {
    int64_t j = col0 + threadIdx.x;
    float s = 0.0f;
    if (j < cols)
      for (int64_t i = threadIdx.y; i < rows; i += sum_row_lanes)
        s += x[i * cols + j];
    partial[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
      float total = 0.0f;
      for (int lane = 0; lane < sum_row_lanes; ++lane)
        total += partial[lane][threadIdx.x];
      // beta == 0 ignores what out held (it may be uninitialized), as BLAS does.
      out[j] = beta == 0.0f ? total : beta * out[j] + total;
    }
    __syncthreads();
  }
}

} // namespace

// ---- the kernels of kernel_decls.inc ----------------------------------------

void add_bias(float* y, const float* bias, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  if (n <= 0)
    return;
  add_bias_kernel<<<grid_for(n), block_size>>>(y, bias, n, cols);
  check_launch("add_bias");
}

void sum_rows(const float* x, float* out, int64_t rows, int64_t cols, float beta) {
  if (cols <= 0)
    return;
  // rows == 0 still writes out = beta * out.
  dim3 block(sum_cols_per_block, sum_row_lanes);
  sum_rows_kernel<<<grid_for(cols, sum_cols_per_block), block>>>(x, out, rows, cols, beta);
  check_launch("sum_rows");
}

void relu_forward(const float* x, float* y, int64_t n) {
  if (n <= 0)
    return;
  relu_forward_kernel<<<grid_for(n), block_size>>>(x, y, n);
  check_launch("relu_forward");
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
  if (n <= 0)
    return;
  relu_backward_kernel<<<grid_for(n), block_size>>>(y, dy, dx, n);
  check_launch("relu_backward");
}

void gelu_forward(const float* x, float* y, int64_t n) {
  if (n <= 0)
    return;
  gelu_forward_kernel<<<grid_for(n), block_size>>>(x, y, n);
  check_launch("gelu_forward");
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0)
    return;
  gelu_backward_kernel<<<grid_for(n), block_size>>>(x, dy, dx, n);
  check_launch("gelu_backward");
}

void tanh_forward(const float* x, float* y, int64_t n) {
  if (n <= 0)
    return;
  tanh_forward_kernel<<<grid_for(n), block_size>>>(x, y, n);
  check_launch("tanh_forward");
}

void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) {
  if (n <= 0)
    return;
  tanh_backward_kernel<<<grid_for(n), block_size>>>(y, dy, dx, n);
  check_launch("tanh_backward");
}

void dropout_forward(const float* x, float* y, float* mask, int64_t n, float p,
                     uint64_t seed) {
  if (n <= 0)
    return;
  float keep_scale = 1.0f / (1.0f - p);
  dropout_kernel<<<grid_for(n), block_size>>>(x, y, mask, n, p, keep_scale, seed);
  check_launch("dropout_forward");
}

void multiply(const float* a, const float* b, float* out, int64_t n) {
  if (n <= 0)
    return;
  multiply_kernel<<<grid_for(n), block_size>>>(a, b, out, n);
  check_launch("multiply");
}

void softmax_cross_entropy(const float* logits, const float* labels, float* grad,
                           float* row_loss, int64_t rows, int64_t cols,
                           float grad_scale) {
  if (rows <= 0)
    return;
  softmax_xent_kernel<<<row_grid(rows), row_block(cols)>>>(logits, labels, grad, row_loss,
                                                           rows, cols, grad_scale);
  check_launch("softmax_cross_entropy");
}

void squared_error(const float* pred, const float* target, float* grad, float* row_loss,
                   int64_t rows, int64_t cols, float grad_scale) {
  if (rows <= 0)
    return;
  squared_error_kernel<<<row_grid(rows), row_block(cols)>>>(pred, target, grad, row_loss,
                                                            rows, cols, grad_scale);
  check_launch("squared_error");
}

void argmax_matches(const float* logits, const float* labels, float* row_match,
                    int64_t rows, int64_t cols) {
  if (rows <= 0)
    return;
  argmax_matches_kernel<<<row_grid(rows), row_block(cols)>>>(logits, labels, row_match,
                                                             rows, cols);
  check_launch("argmax_matches");
}

void fill(float* x, int64_t n, float value) {
  if (n <= 0)
    return;
  fill_kernel<<<grid_for(n), block_size>>>(x, n, value);
  check_launch("fill");
}

void scale(float* x, int64_t n, float alpha) {
  if (n <= 0)
    return;
  scale_kernel<<<grid_for(n), block_size>>>(x, n, alpha);
  check_launch("scale");
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  if (n <= 0)
    return;
  axpy_kernel<<<grid_for(n), block_size>>>(alpha, x, y, n);
  check_launch("axpy");
}

void sgd_update(float* param, const float* grad, float* momentum_buf, int64_t n,
                const sgd_hyper& h) {
  if (n <= 0)
    return;
  sgd_kernel<<<grid_for(n), block_size>>>(param, grad, momentum_buf, n, h);
  check_launch("sgd_update");
}

void adam_update(float* param, const float* grad, float* m, float* v, int64_t n,
                 const adam_hyper& h) {
  if (n <= 0)
    return;
  float step_size = h.lr / h.bias_correction1;
  float bc2_sqrt = std::sqrt(h.bias_correction2);
  adam_kernel<<<grid_for(n), block_size>>>(param, grad, m, v, n, h, step_size, bc2_sqrt);
  check_launch("adam_update");
}

} // namespace dtrain::cuda
