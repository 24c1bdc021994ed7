#pragma once

// Launch helpers shared by the .cu files of dtrain::cuda: a capped grid and
// grid-stride loops with 64-bit indices (any size works), and the launch
// check every host wrapper makes. Include only from .cu files.
#include <cuda_runtime.h>

#include <cstdint>

#include "dtrain/cuda/check.hpp"

namespace dtrain::cuda::launch {

constexpr int block_size = 256;
constexpr int max_blocks = 8192; // many waves on any current GPU; the loops cover the rest
constexpr int warp = 32;

inline unsigned grid_for(int64_t n, int64_t per_block = block_size) {
  int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks);
}

/// Aborts naming `kernel` when its launch failed (a fault inside a running
/// kernel shows later, at a synchronize).
inline void check(const char* kernel) { DTRAIN_CUDA_CHECK(cudaGetLastError(), kernel); }

__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

} // namespace dtrain::cuda::launch

namespace dtrain::cuda::launch {

/// Blocks for a kernel that gives each of `items` (rows, channels) one
/// block and loops over the rest.
inline unsigned grid_per_item(int64_t items) {
  constexpr int64_t max_item_blocks = 65535;
  return static_cast<unsigned>(items < max_item_blocks ? items : max_item_blocks);
}

/// The sum of v over the block; every thread gets it. The block size must be
/// a multiple of the warp size and at most block_size (every warp full, so
/// the shuffles can name all lanes), and every thread of the block must call
/// it. The leading __syncthreads() makes back-to-back calls safe.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T scratch[block_size / warp];
  for (int offset = warp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  __syncthreads();
  if (threadIdx.x % warp == 0)
    scratch[threadIdx.x / warp] = v;
  __syncthreads();
  T total = 0;
  for (unsigned w = 0; w < blockDim.x / warp; ++w)
    total += scratch[w];
  return total;
}

} // namespace dtrain::cuda::launch
