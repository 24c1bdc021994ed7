// dtrain::cuda::gemm on cuBLAS, with one handle per thread and device.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <string>
#include <unordered_map>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/check.hpp"
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
      cublasDestroy(entry.second);
  }

  cublasHandle_t get(int device) {
    auto it = handles_.find(device);
    if (it != handles_.end())
      return it->second;
    std::string where = "cuBLAS handle for cuda:" + std::to_string(device);
    cublasHandle_t handle = nullptr;
    DTRAIN_CUBLAS_CHECK(cublasCreate(&handle), "creating the " + where);
    // Plain FP32, no TF32 tensor cores: results must match the CPU's FP32
    // GEMM to ~1e-5, and TF32 keeps only 10 mantissa bits.
    DTRAIN_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH),
                        "setting the math mode of the " + where);
    DTRAIN_CUBLAS_CHECK(cublasSetStream(handle, nullptr),
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
      cublasSgemm(current_handle(), op_b, op_a, to_int(n, "gemm: n too large"),
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

cublasComputeType_t compute_type_of(precision p) {
  switch (p) {
  case precision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
  case precision::bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
  case precision::fp16: return CUBLAS_COMPUTE_32F_FAST_16F;
  case precision::fp32: break;
  }
  return CUBLAS_COMPUTE_32F;
}

} // namespace

void gemm_ex(precision p, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
             float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float beta, float* c, int64_t ldc) {
  if (p == precision::fp32 || m == 0 || n == 0 || k == 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // float32 buffers in and out, tensor-core compute at p: cuBLAS converts
  // the operands itself, so storage (and with it the master weights and the
  // gradient sync) stays float32. Operand order and flags as in gemm().
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  DTRAIN_CUBLAS_CHECK(
      cublasGemmEx(current_handle(), op_b, op_a, to_int(n, "gemm_ex: n too large"),
                   to_int(m, "gemm_ex: m too large"), to_int(k, "gemm_ex: k too large"),
                   &alpha, b, CUDA_R_32F, to_int(ldb, "gemm_ex: ldb too large"), a,
                   CUDA_R_32F, to_int(lda, "gemm_ex: lda too large"), &beta, c, CUDA_R_32F,
                   to_int(ldc, "gemm_ex: ldc too large"), compute_type_of(p),
                   CUBLAS_GEMM_DEFAULT),
      std::string("cublasGemmEx (") + to_string(p) + ") " + std::to_string(m) + "x" +
          std::to_string(n) + "x" + std::to_string(k) + (trans_a ? " A^T" : "") +
          (trans_b ? " B^T" : ""));
}

} // namespace dtrain::cuda
