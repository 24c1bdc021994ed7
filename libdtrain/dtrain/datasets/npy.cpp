#include "dtrain/datasets/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <utility>
#include <vector>

#include "dtrain/datasets/npy_format.hpp"
#include "dtrain/datasets/npz.hpp"

namespace dtrain::data {

using namespace npy_detail;

namespace {

/// Features and (optional) targets as mapped NumPy arrays, converted to
/// float row by row in gather(). Immutable; gather() is safe from any
/// number of threads (it only reads the mappings).
class npy_dataset final : public dataset {
public:
  npy_dataset(npy_array features, npy_array targets, bool has_targets, int64_t class_count)
    : x_(std::move(features)),
      y_(std::move(targets)),
      has_targets_(has_targets),
      class_count_(class_count) {}

  int64_t size() const override { return x_.rows(); }
  int64_t feature_count() const override { return x_.row_elements; }
  int64_t target_count() const override { return has_targets_ ? y_.row_elements : 0; }
  std::string name() const override {
    return x_.what + " (" + std::to_string(size()) + " records)";
  }
  std::vector<int64_t> sample_shape() const override {
    if (x_.shape.size() == 1)
      return {1};
    return std::vector<int64_t>(x_.shape.begin() + 1, x_.shape.end());
  }
  int64_t class_count() const override { return class_count_; }

  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override {
    const int64_t xs = x_.row_elements, ys = target_count();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = indices[i];
      if (row < 0 || row >= size())
        return status(error_code::out_of_range, x_.what + ": record " + std::to_string(row) +
                                                    " is not in [0, " +
                                                    std::to_string(size()) + ")");
      to_float(x_.data.data + row * xs * x_.type.size, x_.type, xs, features + i * xs);
      if (ys > 0)
        to_float(y_.data.data + row * ys * y_.type.size, y_.type, ys, targets + i * ys);
    }
    return status::ok();
  }

private:
  npy_array x_, y_;
  bool has_targets_;
  int64_t class_count_;
};

bool ends_with(const std::string& text, const std::string& tail) {
  if (text.size() < tail.size())
    return false;
  return std::equal(tail.begin(), tail.end(), text.end() - static_cast<std::ptrdiff_t>(tail.size()),
                    [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

// One array: a whole .npy file, or member `key` of an already mapped .npz.
result<npy_array> open_array(const std::string& path, const byte_view* archive,
                             const std::string& key) {
  if (archive != nullptr) {
    auto member = npz_member(*archive, key + ".npy", path);
    if (!member)
      return member.error();
    return parse_npy(std::move(*member), path + " (array '" + key + "')");
  }
  auto file = map_file(path);
  if (!file)
    return file.error();
  return parse_npy(std::move(*file), path);
}

// Reads every classification target once: each must be an integer >= 0;
// the class count is the largest + 1.
result<int64_t> count_classes(const npy_array& targets) {
  if (targets.row_elements != 1)
    return shape_mismatch(targets.what + ": classification targets need one value per record, "
                                         "got " + std::to_string(targets.row_elements) +
                          " (set classification: false for regression targets)");
  constexpr int64_t chunk = 4096;
  constexpr float largest_class = 1 << 24;  // exact in a float
  std::vector<float> values(chunk);
  float top = -1;
  for (int64_t begin = 0; begin < targets.rows(); begin += chunk) {
    const int64_t n = std::min(chunk, targets.rows() - begin);
    to_float(targets.data.data + begin * targets.type.size, targets.type, n, values.data());
    for (int64_t i = 0; i < n; ++i) {
      const float v = values[static_cast<size_t>(i)];
      if (!(v >= 0 && v < largest_class && v == std::floor(v)))
        return corrupt_data(targets.what + ": record " + std::to_string(begin + i) +
                            ": target " + std::to_string(v) +
                            " is not a class index (an integer >= 0); set classification: "
                            "false for regression targets");
      top = std::max(top, v);
    }
  }
  return static_cast<int64_t>(top) + 1;
}

} // namespace

namespace {

result<std::shared_ptr<const dataset>> open_arrays(const npy_options& options) {
  if (options.features.empty())
    return invalid_argument("npy: no features path given");
  const bool npz = ends_with(options.features, ".npz");
  byte_view archive;
  if (npz) {
    auto file = map_file(options.features);
    if (!file)
      return file.error();
    archive = std::move(*file);
  }
  auto features = open_array(options.features, npz ? &archive : nullptr, options.features_key);
  if (!features)
    return features.error();
  if (features->row_elements == 0)  // (N, 0): N records from no bytes, N up to 2^63
    return corrupt_data(features->what + ": records of no values (shape [" +
                        std::to_string(features->rows()) + ", ..., 0])");
  npy_array targets;
  const bool has_targets = !options.targets.empty();
  if (has_targets) {
    const bool member = npz && !ends_with(options.targets, ".npy") &&
                        options.targets.find('/') == std::string::npos;
    auto opened = member ? open_array(options.features, &archive, options.targets)
                         : open_array(options.targets, nullptr, "");
    if (!opened)
      return opened.error();
    targets = std::move(*opened);
    if (targets.rows() != features->rows())
      return shape_mismatch(features->what + " has " + std::to_string(features->rows()) +
                            " records but " + targets.what + " has " +
                            std::to_string(targets.rows()));
  }
  int64_t class_count = 0;
  if (has_targets && options.classification) {
    auto classes = count_classes(targets);
    if (!classes)
      return classes.error();
    class_count = *classes;
  }
  return std::shared_ptr<const dataset>(std::make_shared<npy_dataset>(
      std::move(*features), std::move(targets), has_targets, class_count));
}

} // namespace

result<std::shared_ptr<const dataset>> read_npy(const npy_options& options) {
  // Only allocation throws below: that is an error of this call.
  try {
    return open_arrays(options);
  } catch (const std::exception& e) {
    return resource_exhausted(options.features + ": " + e.what());
  }
}

} // namespace dtrain::data
