#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>

#include "dtrain/core/status.hpp"

/// Check macros that turn CUDA runtime error codes (cuBLAS: cublas_api.hpp) into errors
/// naming the file, the line and what dtrain was doing (the context, a
/// `const char*` or a `std::string`, evaluated only on failure):
///
///   DTRAIN_CUDA_CHECK(expr, context)       aborts on a cudaError_t != cudaSuccess
///   DTRAIN_CUDA_RETURN_IF_ERROR(expr, ctx) returns a status (error_code::cuda_error)
///   DTRAIN_CUDA_CHECK_LAUNCH(context)      a status for cudaGetLastError()
///
/// The aborting forms print "dtrain: FILE:LINE: CONTEXT: cudaErrorName:
/// message" to stderr. Use them where there is no caller to hand an error to
/// (kernel launches inside void kernels, allocation); use the status forms
/// where the API returns one. Include only from files compiled with CUDA.
namespace dtrain::cuda::detail {

/// "FILE:LINE: CONTEXT: cudaErrorName: message".
inline std::string cuda_error_text(cudaError_t err, const char* file, int line,
                                   const std::string& context) {
  return std::string(file) + ":" + std::to_string(line) + ": " + context + ": " +
         cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
}

[[noreturn]] inline void die(const std::string& text) {
  std::fprintf(stderr, "dtrain: %s\n", text.c_str());
  std::fflush(stderr);
  std::abort();
}

inline status cuda_error_status(cudaError_t err, const char* file, int line,
                                const std::string& context) {
  return status(error_code::cuda_error, cuda_error_text(err, file, line, context));
}

/// cudaGetLastError() as a status: catches a bad launch configuration at
/// once (a fault inside a running kernel shows later, at a synchronize).
inline status launch_status(const char* file, int line, const std::string& context) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess)
    return status::ok();
  return cuda_error_status(err, file, line, context);
}

} // namespace dtrain::cuda::detail

#define DTRAIN_CUDA_CHECK(expr, context)                                       \
  do {                                                                         \
    cudaError_t dtrain_cuda_err_ = (expr);                                     \
    if (dtrain_cuda_err_ != cudaSuccess)                                       \
      ::dtrain::cuda::detail::die(::dtrain::cuda::detail::cuda_error_text(     \
          dtrain_cuda_err_, __FILE__, __LINE__, (context)));                   \
  } while (false)

#define DTRAIN_CUDA_RETURN_IF_ERROR(expr, context)                             \
  do {                                                                         \
    cudaError_t dtrain_cuda_err_ = (expr);                                     \
    if (dtrain_cuda_err_ != cudaSuccess)                                       \
      return ::dtrain::cuda::detail::cuda_error_status(                        \
          dtrain_cuda_err_, __FILE__, __LINE__, (context));                    \
  } while (false)

#define DTRAIN_CUDA_CHECK_LAUNCH(context)                                      \
  ::dtrain::cuda::detail::launch_status(__FILE__, __LINE__, (context))
