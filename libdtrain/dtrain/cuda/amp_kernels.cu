// The CUDA side of fp16 loss scaling (tensor/kernel_decls.inc's
// unscale_and_check_finite), apart from kernels.cu so that mixed precision
// lives in its own file. Same conventions: one grid-stride launch on the
// current device's default stream, the launch checked, no wait.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/check.hpp"
#include "dtrain/cuda/rounding.hpp"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::cuda {

namespace {

constexpr int block_size = 256;
constexpr int max_blocks = 8192;

__global__ void unscale_and_check_finite_kernel(float* x, int64_t n, float inv_scale,
                                                float* found_inf) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  bool bad = false;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = x[i];
    bad |= !isfinite(v);
    x[i] = v * inv_scale;
  }
  // Every writer stores the same 1: the race is benign, no atomic needed.
  if (bad)
    *found_inf = 1.0f;
}

__device__ inline __nv_bfloat16 round_one(float v, __nv_bfloat16*) { return __float2bfloat16_rn(v); }
__device__ inline __half round_one(float v, __half*) { return __float2half_rn(v); }

// out[i * cols + j] = x[i * ld + j] rounded to Half's format.
template <class Half>
__global__ void round_pack_kernel(const float* x, int64_t rows, int64_t cols, int64_t ld,
                                  Half* out) {
  const int64_t n = rows * cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    out[i] = round_one(x[(i / cols) * ld + i % cols], out);
}

} // namespace

void round_to_16bit(precision p, const float* x, int64_t rows, int64_t cols, int64_t ld,
                    void* out) {
  DTRAIN_CHECK(p == precision::bf16 || p == precision::fp16,
               "round_to_16bit takes bf16 or fp16");
  const int64_t n = rows * cols;
  if (n <= 0)
    return;
  const int64_t want = (n + block_size - 1) / block_size;
  const unsigned blocks = static_cast<unsigned>(want < max_blocks ? want : max_blocks);
  if (p == precision::bf16)
    round_pack_kernel<<<blocks, block_size>>>(x, rows, cols, ld,
                                              static_cast<__nv_bfloat16*>(out));
  else
    round_pack_kernel<<<blocks, block_size>>>(x, rows, cols, ld, static_cast<__half*>(out));
  DTRAIN_CUDA_CHECK(cudaGetLastError(), "round_to_16bit");
}

void unscale_and_check_finite(float* x, int64_t n, float inv_scale, float* found_inf) {
  if (n <= 0)
    return;
  const int64_t blocks = (n + block_size - 1) / block_size;
  unscale_and_check_finite_kernel<<<static_cast<unsigned>(blocks < max_blocks ? blocks
                                                                              : max_blocks),
                                    block_size>>>(x, n, inv_scale, found_inf);
  DTRAIN_CUDA_CHECK(cudaGetLastError(), "unscale_and_check_finite");
}

} // namespace dtrain::cuda
