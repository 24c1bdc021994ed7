// The CUDA side of fp16 loss scaling (tensor/kernel_decls.inc's
// unscale_and_check_finite), apart from kernels.cu so that mixed precision
// lives in its own file. Same conventions: one grid-stride launch on the
// current device's default stream, the launch checked, no wait.
#include <cuda_runtime.h>

#include <cstdint>

#include "dtrain/cuda/check.hpp"
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

} // namespace

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
