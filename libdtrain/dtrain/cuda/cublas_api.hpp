#pragma once

// cuBLAS, loaded on first use instead of linked. Linking it costs every
// dtrain process, GPU or not, about 95 MiB of private memory (the
// relocated tables of libcublasLt) and half a second of start-up on this
// machine: a head, each node, each `dtrain status`. Measured by the scale
// harness (docs/scale.md). Only code that runs a GEMM on a GPU loads it.
// Include only from files compiled with CUDA.

#include <string>

#include <cublas_v2.h>

#include "dtrain/core/status.hpp"

namespace dtrain::cuda {

/// The cuBLAS entry points dtrain calls (cublas_v2.h's names).
struct cublas_api {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm) sgemm = nullptr;
  // Spelled out: C++ sees cublasGemmEx overloaded (an inline one takes a
  // cudaDataType compute type); this is the library's own.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                            int, const void*, const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

/// Loads cuBLAS (libcublas.so.<CUDA major> from the loader's search path,
/// else the file the build linked against) once per process; ok, or an
/// error naming what was tried and dlerror's reason. Thread-safe; a
/// failure is remembered.
status load_cublas();

/// The loaded entry points. Aborts with load_cublas()'s message when cuBLAS
/// cannot be loaded: a GEMM on a GPU has no caller to hand an error to.
const cublas_api& cublas();

namespace detail {
/// "FILE:LINE: CONTEXT: CUBLAS_STATUS_NAME: message".
std::string cublas_error_text(cublasStatus_t err, const char* file, int line,
                              const std::string& context);
} // namespace detail

} // namespace dtrain::cuda

/// Aborts on a cublasStatus_t != CUBLAS_STATUS_SUCCESS, printing
/// "dtrain: FILE:LINE: CONTEXT: CUBLAS_STATUS_NAME: message" (check.hpp).
#define DTRAIN_CUBLAS_CHECK(expr, context)                                     \
  do {                                                                         \
    cublasStatus_t dtrain_cublas_err_ = (expr);                                \
    if (dtrain_cublas_err_ != CUBLAS_STATUS_SUCCESS)                           \
      ::dtrain::cuda::detail::die(::dtrain::cuda::detail::cublas_error_text(   \
          dtrain_cublas_err_, __FILE__, __LINE__, (context)));                 \
  } while (false)
