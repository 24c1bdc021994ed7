#pragma once

#include <cstdint>

#include "dtrain/core/status.hpp"

namespace dtrain {

/// This process's resident set size in bytes (VmRSS of /proc/self/status),
/// or an error naming the file (not Linux, no such line). Reads one small
/// file; thread-safe.
result<int64_t> resident_memory_bytes();

} // namespace dtrain
