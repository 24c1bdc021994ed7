#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// The contents of one IDX file (the MNIST format, optionally gzip'd):
/// its dimensions and its unsigned-byte values, row-major
/// (values.size() is the product of dims).
struct idx_array {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;
};

/// Reads an IDX file of unsigned bytes (type code 0x08), gzip'd or not
/// (detected from the content, not the name; zlib reads both). The whole
/// stream is decompressed in large reads straight into `values`. Every error
/// message starts with the path:
///  - not_found: the file does not exist; io_error: it cannot be opened or
///    read (permissions, a directory);
///  - corrupt_data: a bad gzip stream (zlib's reason: cut short, invalid
///    data, CRC mismatch), a magic number not starting 0x00 0x00, a type code
///    other than 0x08 (named), a header cut short, fewer values than the
///    dimensions promise ("promises N bytes of data, got M"), or more:
///    trailing bytes after the data are rejected, since they mean the header
///    is wrong. (Bytes after the end of a gzip member are skipped by zlib.)
result<idx_array> read_idx(const std::string& path);

/// Which Fashion-MNIST file pair to load: train (60000) or t10k (10000).
enum class split { train, test };

/// Fashion-MNIST from `dir` (Debian's dataset-fashion-mnist installs it in
/// /usr/share/datasets/fashion-mnist): {train,t10k}-{images-idx3,labels-idx1}
/// -ubyte.gz, or the same names without .gz when only those exist. Images
/// become features [N, 784] scaled to [0, 1] (x / 255, as torchvision), labels
/// targets [N] holding the class index as a float. Errors are read_idx's,
/// plus corrupt_data naming the file(s) for images that are not Nx28x28,
/// image and label counts that differ (both files and counts named), or a
/// label outside [0, 10) (its value and sample index named).
result<std::shared_ptr<tensor_dataset>> load_fashion_mnist(const std::string& dir,
                                                           split which);

/// The default directory: $DTRAIN_FASHION_MNIST if set, else Debian's path.
std::string default_fashion_mnist_dir();

} // namespace dtrain::data
