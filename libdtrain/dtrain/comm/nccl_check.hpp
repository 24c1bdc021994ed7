#pragma once

#include <nccl.h>

#include <string>

#include "dtrain/core/status.hpp"

/// A check macro that turns an ncclResult_t into a dtrain::status naming the
/// file, the line and what dtrain was doing (the context, a `const char*` or a
/// `std::string`, evaluated only on failure):
///
///   DTRAIN_NCCL_RETURN_IF_ERROR(expr, context)
///
/// returns error_code::cuda_error with "FILE:LINE: CONTEXT: NCCL error N:
/// <ncclGetErrorString> (last error: <ncclGetLastError>)" when expr is
/// neither ncclSuccess nor ncclInProgress. ncclInProgress passes: a call on a
/// non-blocking communicator returns it for work that was accepted and goes on
/// in the background, which the caller then polls with ncclCommGetAsyncError.
/// Include only from files compiled with NCCL (DTRAIN_HAS_NCCL).
namespace dtrain::comm::detail {

/// "FILE:LINE: CONTEXT: NCCL error N: text (last error: detail)". `comm` may
/// be null (NCCL then reports the process's last error); it must not have
/// been destroyed or aborted.
inline std::string nccl_error_text(ncclResult_t err, ncclComm_t comm, const char* file, int line,
                                   const std::string& context) {
  std::string text = std::string(file) + ":" + std::to_string(line) + ": " + context +
                     ": NCCL error " + std::to_string(static_cast<int>(err)) + ": " +
                     ncclGetErrorString(err);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0')
    text += std::string(" (last error: ") + last + ")";
  return text;
}

inline status nccl_error_status(ncclResult_t err, ncclComm_t comm, const char* file, int line,
                                const std::string& context) {
  return status(error_code::cuda_error, nccl_error_text(err, comm, file, line, context));
}

inline bool nccl_failed(ncclResult_t err) { return err != ncclSuccess && err != ncclInProgress; }

} // namespace dtrain::comm::detail

#define DTRAIN_NCCL_RETURN_IF_ERROR(expr, context)                             \
  do {                                                                         \
    ncclResult_t dtrain_nccl_err_ = (expr);                                    \
    if (::dtrain::comm::detail::nccl_failed(dtrain_nccl_err_))                 \
      return ::dtrain::comm::detail::nccl_error_status(                        \
          dtrain_nccl_err_, nullptr, __FILE__, __LINE__, (context));           \
  } while (false)
