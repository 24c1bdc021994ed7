#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

/// The NumPy file layer of the .npy reader (internal to datasets/): mapped
/// bytes, the .npy header, and element conversion to float.
namespace dtrain::data::npy_detail {

/// Read-only bytes kept alive by `owner` (a file mapping or a heap buffer).
struct byte_view {
  std::shared_ptr<const void> owner;
  const unsigned char* data = nullptr;
  size_t size = 0;
};

/// Maps `path` read-only (pages are read on first touch, so the file may be
/// larger than memory). not_found / io_error naming the path; corrupt_data
/// for an empty file. Safe to read from any thread; the file must not be
/// truncated while mapped (that would fault the reader).
result<byte_view> map_file(const std::string& path);

/// An element type the reader converts: kind 'f' (size 2, 4, 8), 'i' or
/// 'u' (1, 2, 4, 8), 'b' (1), little-endian.
struct dtype {
  char kind = 'f';
  int size = 4;
};

/// One .npy array: its element type, shape, and data bytes (C order).
struct npy_array {
  byte_view data;
  dtype type;
  std::vector<int64_t> shape;
  std::string what;  // the file (and array) for messages

  int64_t rows() const { return shape[0]; }
  /// Elements per row: the product of shape[1:] (1 for a 1-d array).
  int64_t row_elements = 1;
};

/// Parses the .npy image `file` (format versions 1, 2, 3). corrupt_data
/// naming `what` for a bad magic string or version, a header cut short or
/// missing a key, data shorter or longer than the shape promises; and for
/// what the reader refuses: fortran_order True, a 0-d array, a structured,
/// complex, object, string or big-endian dtype (the dtype named).
result<npy_array> parse_npy(byte_view file, const std::string& what);

/// Converts `count` elements of `type` at `src` (any alignment) to float.
void to_float(const unsigned char* src, dtype type, int64_t count, float* out);

} // namespace dtrain::data::npy_detail
