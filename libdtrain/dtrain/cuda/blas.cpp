// dtrain::cuda::gemm on cuBLAS, with one handle per thread and device.
#include <cuda_runtime_api.h>

#include <climits>
#include <string>
#include <unordered_map>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/check.hpp"
#include "dtrain/cuda/cublas_api.hpp"
#include "dtrain/cuda/rounding.hpp"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::cuda {

namespace {

/// The calling thread's cuBLAS handles, one per device, created on first
/// use and destroyed when the thread exits. A handle is not safe to share
/// between threads that call cuBLAS at once (ranks run as threads), hence
/// thread_local; it is bound to the device current when it was created,
/// hence one per device. Each runs on the default stream in plain FP32;
/// gemm_ex asks for its reduced-precision compute type per call instead.
class handle_cache {
public:
  handle_cache() = default;
  handle_cache(const handle_cache&) = delete;
  handle_cache& operator=(const handle_cache&) = delete;

  ~handle_cache() {
    // Best effort: at process exit the runtime may already be gone.
    for (auto& entry : handles_)
      cublas().destroy(entry.second);
  }

  cublasHandle_t get(int device) {
    auto it = handles_.find(device);
    if (it != handles_.end())
      return it->second;
    std::string where = "cuBLAS handle for cuda:" + std::to_string(device);
    cublasHandle_t handle = nullptr;
    DTRAIN_CUBLAS_CHECK(cublas().create(&handle), "creating the " + where);
    // Plain FP32, no TF32 tensor cores: results must match the CPU's FP32
    // GEMM to ~1e-5, and TF32 keeps only 10 mantissa bits.
    DTRAIN_CUBLAS_CHECK(cublas().set_math_mode(handle, CUBLAS_DEFAULT_MATH),
                        "setting the math mode of the " + where);
    DTRAIN_CUBLAS_CHECK(cublas().set_stream(handle, nullptr),
                        "setting the stream of the " + where);
    handles_.emplace(device, handle);
    return handle;
  }

private:
  std::unordered_map<int, cublasHandle_t> handles_;
};

cublasHandle_t current_handle() {
  thread_local handle_cache cache;
  int device = 0;
  DTRAIN_CUDA_CHECK(cudaGetDevice(&device), "gemm: cudaGetDevice");
  return cache.get(device);
}

int to_int(int64_t v, const char* what) {
  DTRAIN_CHECK(v >= 0 && v <= INT_MAX, what);
  return static_cast<int>(v);
}

/// C = beta * C for the m x n row-major matrix at c with row stride ldc: what
/// a GEMM with k == 0 computes. beta == 0 overwrites C (NaN included), as
/// BLAS does.
void scale_matrix(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  if (beta == 1.0f)
    return;
  if (beta == 0.0f) {
    DTRAIN_CUDA_CHECK(cudaMemset2D(c, static_cast<size_t>(ldc) * sizeof(float), 0,
                                   static_cast<size_t>(n) * sizeof(float),
                                   static_cast<size_t>(m)),
                      "gemm with k == 0: zeroing C");
    return;
  }
  if (ldc == n) {
    scale(c, m * n, beta);
    return;
  }
  // Strided C with k == 0 never comes from ops::matmul; one launch per row.
  for (int64_t i = 0; i < m; ++i)
    scale(c + i * ldc, n, beta);
}

} // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
          float* c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    scale_matrix(m, n, beta, c, ldc);
    return;
  }
  // cuBLAS is column-major, and a row-major matrix read column-major is its
  // transpose. So the row-major C = op(A) op(B) is the column-major
  // C^T = op(B)^T op(A)^T: B comes first, m and n swap, and each operand
  // keeps its own transpose flag (B as stored, read column-major, is B^T).
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  DTRAIN_CUBLAS_CHECK(
      cublas().sgemm(current_handle(), op_b, op_a, to_int(n, "gemm: n too large"),
                  to_int(m, "gemm: m too large"), to_int(k, "gemm: k too large"), &alpha,
                  b, to_int(ldb, "gemm: ldb too large"), a,
                  to_int(lda, "gemm: lda too large"), &beta, c,
                  to_int(ldc, "gemm: ldc too large")),
      "cublasSgemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
          std::to_string(k) + (trans_a ? " A^T" : "") + (trans_b ? " B^T" : ""));
}

} // namespace dtrain::cuda

namespace dtrain::cuda {

namespace {

/// A device buffer per thread and device that only grows: the rounded
/// operands of gemm_ex. Everything runs on the default stream, so a buffer
/// is free again for the next call's conversion once this call's GEMM was
/// enqueued after it.
class scratch_cache {
public:
  scratch_cache() = default;
  scratch_cache(const scratch_cache&) = delete;
  scratch_cache& operator=(const scratch_cache&) = delete;

  ~scratch_cache() {
    for (auto& entry : buffers_)
      cudaFree(entry.second.data);  // best effort at thread exit
  }

  void* get(int device, size_t bytes) {
    buffer& b = buffers_[device];
    if (b.bytes < bytes) {
      DTRAIN_CUDA_CHECK(cudaFree(b.data), "gemm_ex: freeing the operand scratch");
      b = buffer{};
      DTRAIN_CUDA_CHECK(cudaMalloc(&b.data, bytes),
                        "gemm_ex: " + std::to_string(bytes) + " bytes of operand scratch");
      b.bytes = bytes;
    }
    return b.data;
  }

private:
  struct buffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  std::unordered_map<int, buffer> buffers_;
};

} // namespace

void gemm_ex(precision p, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
             float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float beta, float* c, int64_t ldc) {
  if (p == precision::fp32 || m == 0 || n == 0 || k == 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::string what = std::string("cublasGemmEx (") + to_string(p) + ") " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" +
                           std::to_string(k) + (trans_a ? " A^T" : "") + (trans_b ? " B^T" : "");
  if (p == precision::tf32) {
    // float32 operands read as TF32 by the tensor cores: what the CPU
    // emulation's rounding to 10 mantissa bits reproduces.
    DTRAIN_CUBLAS_CHECK(
        cublas().gemm_ex(current_handle(), op_b, op_a, to_int(n, "gemm_ex: n too large"),
                     to_int(m, "gemm_ex: m too large"), to_int(k, "gemm_ex: k too large"),
                         &alpha, b, CUDA_R_32F, to_int(ldb, "gemm_ex: ldb too large"), a,
                     CUDA_R_32F, to_int(lda, "gemm_ex: lda too large"), &beta, c, CUDA_R_32F,
                     to_int(ldc, "gemm_ex: ldc too large"), CUBLAS_COMPUTE_32F_FAST_TF32,
                     CUBLAS_GEMM_DEFAULT),
        what);
    return;
  }
  // bf16 and fp16: the operands are rounded here, into 16-bit copies, and
  // multiplied with float32 accumulation, as the CPU emulation and torch's
  // autocast do. Not CUBLAS_COMPUTE_32F_FAST_16BF/16F on float32 operands:
  // those only permit a down-conversion, and on an H100 cuBLAS 13 ran
  // TF32 kernels for both: their error against float32 equalled tf32's to
  // the last digit, bf16 missed the emulation by 1e-2, and an fp16 operand
  // of 70001 did not become infinity.
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  thread_local scratch_cache scratch;
  int device = 0;
  DTRAIN_CUDA_CHECK(cudaGetDevice(&device), "gemm_ex: cudaGetDevice");
  // One buffer: A's copy, then B's at a 256-byte boundary (cuBLAS prefers it).
  const size_t b_offset = (static_cast<size_t>(a_rows * a_cols) * 2 + 255) / 256 * 256;
  char* ra = static_cast<char*>(
      scratch.get(device, b_offset + static_cast<size_t>(b_rows * b_cols) * 2));
  char* rb = ra + b_offset;
  round_to_16bit(p, a, a_rows, a_cols, lda, ra);
  round_to_16bit(p, b, b_rows, b_cols, ldb, rb);
  const cudaDataType_t half = p == precision::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  DTRAIN_CUBLAS_CHECK(
      cublas().gemm_ex(current_handle(), op_b, op_a, to_int(n, "gemm_ex: n too large"),
                   to_int(m, "gemm_ex: m too large"), to_int(k, "gemm_ex: k too large"),
                   &alpha, rb, half, to_int(b_cols, "gemm_ex: ldb too large"), ra, half,
                   to_int(a_cols, "gemm_ex: lda too large"), &beta, c, CUDA_R_32F,
                   to_int(ldc, "gemm_ex: ldc too large"), CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT),
      what);
}

} // namespace dtrain::cuda
