#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// The contents of one IDX file (the MNIST format, optionally gzip'd):
/// its dimensions and its unsigned-byte values.
struct idx_array {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;
};

/// Reads an IDX file of unsigned bytes (type code 0x08), gzip'd or not
/// (detected from the content, not the name). Errors name the file and what
/// is wrong: missing or unreadable, a bad gzip stream, a wrong magic number,
/// an unsupported type code, or fewer values than the header promises
/// (a truncated file).
result<idx_array> read_idx(const std::string& path);

enum class split { train, test };

/// Fashion-MNIST from `dir` (Debian's dataset-fashion-mnist installs it in
/// /usr/share/datasets/fashion-mnist): images as 784 floats scaled to
/// [0, 1], labels as one float class index in [0, 10). Errors name the file;
/// image and label files whose counts differ, or images that are not 28x28,
/// or labels out of range, are refused.
result<std::shared_ptr<tensor_dataset>> load_fashion_mnist(const std::string& dir,
                                                           split which);

/// The default directory: $DTRAIN_FASHION_MNIST if set, else Debian's path.
std::string default_fashion_mnist_dir();

} // namespace dtrain::data
