#pragma once

#include <cstdio>
#include <cstdlib>

#include "dtrain/core/status.hpp"

/// Aborts with file, line and the failed condition: only for invariants
/// that dtrain itself breaks, never for bad user input (that returns a
/// status naming the culprit).
#define DTRAIN_CHECK(cond, msg)                                                \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "dtrain: %s:%d: check '%s' failed: %s\n", __FILE__, \
                   __LINE__, #cond, (msg));                                    \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

/// Returns the status of `expr` from the enclosing function if it failed.
#define DTRAIN_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::dtrain::status dtrain_status_ = (expr);                                  \
    if (!dtrain_status_.is_ok())                                               \
      return dtrain_status_;                                                   \
  } while (false)

#define DTRAIN_CONCAT_INNER(a, b) a##b
#define DTRAIN_CONCAT(a, b) DTRAIN_CONCAT_INNER(a, b)

/// `DTRAIN_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a result or returns
/// its error from the enclosing function.
#define DTRAIN_ASSIGN_OR_RETURN(lhs, expr)                                     \
  DTRAIN_ASSIGN_OR_RETURN_IMPL(DTRAIN_CONCAT(dtrain_result_, __LINE__), lhs,  \
                               expr)
#define DTRAIN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                           \
  auto tmp = (expr);                                                           \
  if (!tmp.is_ok())                                                            \
    return tmp.error();                                                        \
  lhs = std::move(tmp).value()
