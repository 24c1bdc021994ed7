#include "dtrain/data/dataset.hpp"

#include <cstring>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain::data {

namespace {

// Floats per row of a tensor whose first axis counts samples: the product of
// the other axes (1 for a [N] tensor). Defined even when N is 0.
int64_t row_width(const tensor& t) {
  int64_t width = 1;
  for (int64_t axis = 1; axis < t.dim(); ++axis)
    width *= t.size(axis);
  return width;
}

} // namespace

result<std::shared_ptr<tensor_dataset>> tensor_dataset::create(tensor features,
                                                              tensor targets,
                                                              std::string name,
                                                              int64_t class_count) {
  const std::string what = "tensor_dataset '" + name + "': ";
  if (!features.defined() || features.dim() < 1)
    return shape_mismatch(what + "features must have a sample axis, got shape " +
                          shape_string(features.shape()));
  if (!targets.defined() || targets.dim() < 1)
    return shape_mismatch(what + "targets must have a sample axis, got shape " +
                          shape_string(targets.shape()));
  if (features.size(0) != targets.size(0))
    return shape_mismatch(what + "features " + shape_string(features.shape()) +
                          " and targets " + shape_string(targets.shape()) +
                          " have different row counts");
  if (!features.where().is_cpu() || !targets.where().is_cpu())
    return shape_mismatch(what + "features (on " + features.where().to_string() +
                          ") and targets (on " + targets.where().to_string() +
                          ") must be host tensors");
  return std::shared_ptr<tensor_dataset>(
      new tensor_dataset(std::move(features), std::move(targets), std::move(name), class_count));
}

tensor_dataset::tensor_dataset(tensor features, tensor targets, std::string name,
                               int64_t class_count)
  : features_(std::move(features)),
    targets_(std::move(targets)),
    feature_count_(row_width(features_)),
    target_count_(row_width(targets_)),
    name_(std::move(name)),
    class_count_(class_count) {}

status tensor_dataset::gather(const int64_t* indices, int64_t n, float* features,
                              float* targets) const {
  const int64_t rows = size();
  const float* src_x = features_.data();
  const float* src_y = targets_.data();
  const size_t x_bytes = static_cast<size_t>(feature_count_) * sizeof(float);
  const size_t y_bytes = static_cast<size_t>(target_count_) * sizeof(float);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = indices[i];
    if (row < 0 || row >= rows)
      return status(error_code::out_of_range, name_ + ": sample " + std::to_string(row) + " is not in [0, " +
                          std::to_string(rows) + ")");
    std::memcpy(features + i * feature_count_, src_x + row * feature_count_, x_bytes);
    std::memcpy(targets + i * target_count_, src_y + row * target_count_, y_bytes);
  }
  return status::ok();
}

} // namespace dtrain::data
