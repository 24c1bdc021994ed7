#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"

namespace dtrain {

/// A whole file mapped read-only and private. Pages are read on first
/// touch, so the file may be larger than memory; copies share the mapping,
/// the last one unmaps it. The file must not be truncated while mapped
/// (that faults the reader). Safe to read from any thread.
struct mapped_file {
  std::shared_ptr<const void> owner;  // the mapping; null for an empty file
  const unsigned char* data = nullptr;
  size_t size = 0;

  /// `sequential`: the file is read through once, front to back: its pages
  /// are populated up front (one fault per page would cost more than a
  /// parse) and read ahead. An empty file maps to size 0. Errors: os_error
  /// naming the path (cannot open; a directory; cannot map).
  static result<mapped_file> open(const std::string& path, bool sequential = false);
};

} // namespace dtrain
