#include "support/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <boost/test/unit_test.hpp>

#include "dtrain/core/random.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::testing {

tensor random_tensor(const shape_t& shape, uint64_t seed, float scale) {
  rng gen(seed);
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)));
  for (auto& v : values)
    v = scale * gen.normal();
  return tensor::from_vector(values, shape);
}

double max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double denom = std::max(1.0, std::fabs(static_cast<double>(b[i])));
    double err = std::fabs(static_cast<double>(a[i]) - b[i]) / denom;
    if (std::isnan(err))
      return INFINITY;
    worst = std::max(worst, err);
  }
  return worst;
}

temp_dir::temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dtrain-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

bool cuda_device_or_skip() {
  if (cuda::available())
    return true;
  BOOST_TEST_MESSAGE("SKIPPED (no CUDA device: " << cuda::unavailable_reason() << ")");
  return false;
}

std::string fashion_mnist_dir() {
  const char* env = std::getenv("DTRAIN_FASHION_MNIST");
  return env != nullptr ? env : "/usr/share/datasets/fashion-mnist";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace dtrain::testing
