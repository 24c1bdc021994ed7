#pragma once

#include <cstdint>

#include "dtrain/tensor/precision.hpp"

/// Operand rounding for reduced-precision GEMMs on the device
/// (cuda/blas.cpp's gemm_ex), the device twin of the CPU emulation's
/// rounded copy (tensor/kernels_cpu.cpp). Internal to libdtrain's CUDA
/// build; not installed.
namespace dtrain::cuda {

/// Rounds the rows x cols row-major matrix at `x` (device memory, row
/// stride `ld` floats) to `p` (bf16 or fp16, round to nearest even; fp16
/// past 65504 becomes infinity) and packs it densely into `out` (device
/// memory of rows * cols 2-byte values, cuBLAS's CUDA_R_16BF or CUDA_R_16F).
/// Enqueued on the current device's default stream, the launch checked, no
/// wait. Any other precision is a broken invariant.
void round_to_16bit(precision p, const float* x, int64_t rows, int64_t cols, int64_t ld,
                    void* out);

} // namespace dtrain::cuda
