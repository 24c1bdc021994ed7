#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/tensor/tensor.hpp"

/// Helpers shared by the test suites.
namespace dtrain::testing {

/// A host tensor of normal(0, scale) values drawn from `seed`.
tensor random_tensor(const shape_t& shape, uint64_t seed, float scale = 1.0f);

/// Largest |a - b| / max(1, |b|) over all elements (shapes must match).
double max_relative_error(const std::vector<float>& a, const std::vector<float>& b);

/// A fresh empty directory under the system temp dir, removed by the
/// destructor with everything in it.
class temp_dir {
public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// True with a CUDA device; otherwise logs "SKIPPED (no CUDA device: why)",
/// the text CTest's SKIP_REGULAR_EXPRESSION of the gpu suites looks for.
bool cuda_device_or_skip();

/// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);
/// Replaces a file's contents (no atomicity: tests only).
void write_file(const std::string& path, const std::string& content);
/// The names in a directory, sorted.
std::vector<std::string> entries(const std::string& dir);

/// Where Debian's dataset-fashion-mnist puts the data, or $DTRAIN_FASHION_MNIST.
std::string fashion_mnist_dir();

} // namespace dtrain::testing
