#include "dtrain/data/transforms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain::data {

namespace {

std::string list(const std::vector<float>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    char number[32];
    std::snprintf(number, sizeof number, "%g", static_cast<double>(values[i]));
    text += (i == 0 ? "" : ", ") + std::string(number);
  }
  return text + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "{";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + "}";
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

status check_mean_std(const char* what, const std::vector<float>& mean,
                      const std::vector<float>& stddev) {
  if (mean.empty() || mean.size() != stddev.size())
    return invalid_argument(std::string(what) + ": mean has " + std::to_string(mean.size()) +
                            " values and std " + std::to_string(stddev.size()) +
                            "; both need the same number, at least one");
  for (size_t i = 0; i < stddev.size(); ++i)
    if (!(stddev[i] > 0.0f) || !std::isfinite(stddev[i]))
      return invalid_argument(std::string(what) + ": std[" + std::to_string(i) + "] = " +
                              std::to_string(stddev[i]) + " is not positive and finite");
  return status::ok();
}

std::vector<float> inverses(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = 1.0f / values[i];
  return out;
}

/// An image-like shape as (planes, height, width): {C, H, W} or {H, W}.
struct planes {
  int64_t count, height, width;
};

planes as_planes(const std::vector<int64_t>& shape) {
  if (shape.size() == 2)
    return {1, shape[0], shape[1]};
  return {shape[0], shape[1], shape[2]};
}

status check_image_shape(const std::string& who, const std::vector<int64_t>& shape) {
  if (shape.size() != 2 && shape.size() != 3)
    return shape_mismatch(who + " needs image samples {C, H, W} or {H, W}, not " +
                          shape_text(shape));
  return status::ok();
}

/// Running (count, mean, M2) of one group of values, in double.
struct running_moments {
  double count = 0, mean = 0, m2 = 0;

  // Chan et al.'s pairwise update: folds in a chunk's own moments.
  void merge(double n, double chunk_mean, double chunk_m2) {
    if (n == 0)
      return;
    double total = count + n;
    double delta = chunk_mean - mean;
    mean += delta * n / total;
    m2 += chunk_m2 + delta * delta * count * n / total;
    count = total;
  }
};

/// Folds the values x[i * stride + f], i < rows, f < block, into `acc`:
/// the chunk's own mean first, then its squared deviations from it (two
/// passes over data in cache), merged in one step.
void fold_chunk(const float* x, int64_t rows, int64_t stride, int64_t block,
                running_moments& acc) {
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t f = 0; f < block; ++f)
      sum += x[i * stride + f];
  const double values = static_cast<double>(rows * block), mean = sum / values;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t f = 0; f < block; ++f) {
      double d = x[i * stride + f] - mean;
      squares += d * d;
    }
  acc.merge(values, mean, squares);
}

/// Moments of `groups` equal blocks of each sample's features, over the
/// whole data set, in one pass of chunked gathers.
result<moments> compute_moments(const dataset& data, int64_t groups) {
  const int64_t n = data.size(), width = data.feature_count();
  if (n <= 0 || width <= 0)
    return invalid_argument(data.name() + ": no samples to compute a mean and std from");
  const int64_t block = width / groups;
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(n, (int64_t{1} << 20) / width));
  std::vector<float> features(static_cast<size_t>(rows * width));
  std::vector<float> targets(static_cast<size_t>(rows * std::max<int64_t>(1, data.target_count())));
  std::vector<int64_t> indices(static_cast<size_t>(rows));
  std::vector<running_moments> acc(static_cast<size_t>(groups));
  for (int64_t first = 0; first < n; first += rows) {
    const int64_t count = std::min(rows, n - first);
    for (int64_t i = 0; i < count; ++i)
      indices[static_cast<size_t>(i)] = first + i;
    status got = data.gather(indices.data(), count, features.data(), targets.data());
    if (!got.is_ok())
      return got.with_context(data.name());
    for (int64_t g = 0; g < groups; ++g)
      fold_chunk(features.data() + g * block, count, width, block, acc[static_cast<size_t>(g)]);
  }
  moments out;
  for (const running_moments& m : acc) {
    double deviation = std::sqrt(m.m2 / m.count);
    out.mean.push_back(static_cast<float>(m.mean));
    out.std.push_back(deviation > 0 ? static_cast<float>(deviation) : 1.0f);  // constant: leave unscaled
  }
  return out;
}

} // namespace

// ---- normalize ----

normalize::normalize(std::vector<float> mean, std::vector<float> stddev)
  : mean_(std::move(mean)), inverse_std_(inverses(stddev)), std_(std::move(stddev)) {}

result<std::shared_ptr<const normalize>> normalize::create(std::vector<float> mean,
                                                           std::vector<float> stddev) {
  DTRAIN_RETURN_IF_ERROR(check_mean_std("normalize", mean, stddev));
  return std::shared_ptr<const normalize>(new normalize(std::move(mean), std::move(stddev)));
}

std::string normalize::name() const {
  return "normalize(mean " + list(mean_) + ", std " + list(std_) + ")";
}

status normalize::check_shape(const std::vector<int64_t>& shape) const {
  if (shape.empty() || (mean_.size() != 1 && static_cast<int64_t>(mean_.size()) != shape[0]))
    return shape_mismatch(name() + ": has " + std::to_string(mean_.size()) +
                          " values, samples are " + shape_text(shape) +
                          " (one value, or one per channel of axis 0)");
  return status::ok();
}

void normalize::apply(float* features, const std::vector<int64_t>& shape, rng&) const {
  DTRAIN_CHECK(check_shape(shape).is_ok(), "normalize applied to a shape it does not take");
  const int64_t channels = shape[0], plane = product(shape) / channels;
  const bool shared = mean_.size() == 1;
  for (int64_t c = 0; c < channels; ++c) {
    const float m = mean_[shared ? 0 : static_cast<size_t>(c)];
    const float s = inverse_std_[shared ? 0 : static_cast<size_t>(c)];
    float* x = features + c * plane;
    for (int64_t i = 0; i < plane; ++i)
      x[i] = (x[i] - m) * s;
  }
}

result<moments> compute_normalization(const dataset& data, bool per_channel) {
  const std::vector<int64_t> shape = data.sample_shape();
  const int64_t groups = per_channel && !shape.empty() && shape[0] > 0 ? shape[0] : 1;
  return compute_moments(data, groups);
}

// ---- standardize ----

standardize::standardize(std::vector<float> mean, std::vector<float> stddev)
  : mean_(std::move(mean)), inverse_std_(inverses(stddev)) {}

result<std::shared_ptr<const standardize>> standardize::create(std::vector<float> mean,
                                                               std::vector<float> stddev) {
  DTRAIN_RETURN_IF_ERROR(check_mean_std("standardize", mean, stddev));
  return std::shared_ptr<const standardize>(new standardize(std::move(mean), std::move(stddev)));
}

std::string standardize::name() const {
  return "standardize(" + std::to_string(mean_.size()) + " features)";
}

status standardize::check_shape(const std::vector<int64_t>& shape) const {
  if (product(shape) != static_cast<int64_t>(mean_.size()))
    return shape_mismatch(name() + ": samples are " + shape_text(shape) + ", not " +
                          std::to_string(mean_.size()) + " features");
  return status::ok();
}

void standardize::apply(float* features, const std::vector<int64_t>& shape, rng&) const {
  DTRAIN_CHECK(check_shape(shape).is_ok(), "standardize applied to a shape it does not take");
  for (size_t f = 0; f < mean_.size(); ++f)
    features[f] = (features[f] - mean_[f]) * inverse_std_[f];
}

result<moments> compute_standardization(const dataset& data) {
  return compute_moments(data, std::max<int64_t>(1, data.feature_count()));
}

// ---- random_crop ----

result<std::shared_ptr<const random_crop>> random_crop::create(int64_t padding) {
  if (padding < 0)
    return invalid_argument("random_crop: padding " + std::to_string(padding) +
                            " is negative");
  return std::shared_ptr<const random_crop>(new random_crop(padding));
}

std::string random_crop::name() const {
  return "random_crop(padding " + std::to_string(padding_) + ")";
}

status random_crop::check_shape(const std::vector<int64_t>& shape) const {
  return check_image_shape(name(), shape);
}

void random_crop::apply(float* features, const std::vector<int64_t>& shape, rng& gen) const {
  DTRAIN_CHECK(check_shape(shape).is_ok(), "random_crop applied to a non-image shape");
  const auto span = static_cast<uint64_t>(2 * padding_ + 1);
  // Output (y, x) reads input (y + dy, x + dx); outside the input is padding.
  const int64_t dy = static_cast<int64_t>(gen.below(span)) - padding_;
  const int64_t dx = static_cast<int64_t>(gen.below(span)) - padding_;
  if (dy == 0 && dx == 0)
    return;
  const planes p = as_planes(shape);
  std::vector<float> source(static_cast<size_t>(p.height * p.width));
  for (int64_t c = 0; c < p.count; ++c) {
    float* plane = features + c * p.height * p.width;
    std::copy(plane, plane + p.height * p.width, source.begin());
    for (int64_t y = 0; y < p.height; ++y) {
      const int64_t sy = y + dy;
      for (int64_t x = 0; x < p.width; ++x) {
        const int64_t sx = x + dx;
        const bool inside = sy >= 0 && sy < p.height && sx >= 0 && sx < p.width;
        plane[y * p.width + x] = inside ? source[static_cast<size_t>(sy * p.width + sx)] : 0.0f;
      }
    }
  }
}

// ---- horizontal_flip ----

result<std::shared_ptr<const horizontal_flip>> horizontal_flip::create(float p) {
  if (!(p >= 0.0f && p <= 1.0f))
    return invalid_argument("horizontal_flip: p " + std::to_string(p) + " is not in [0, 1]");
  return std::shared_ptr<const horizontal_flip>(new horizontal_flip(p));
}

std::string horizontal_flip::name() const {
  char text[48];
  std::snprintf(text, sizeof text, "horizontal_flip(p %g)", static_cast<double>(p_));
  return text;
}

status horizontal_flip::check_shape(const std::vector<int64_t>& shape) const {
  return check_image_shape(name(), shape);
}

void horizontal_flip::apply(float* features, const std::vector<int64_t>& shape,
                            rng& gen) const {
  DTRAIN_CHECK(check_shape(shape).is_ok(), "horizontal_flip applied to a non-image shape");
  if (!(gen.uniform() < p_))
    return;
  const planes p = as_planes(shape);
  for (int64_t row = 0; row < p.count * p.height; ++row)
    std::reverse(features + row * p.width, features + (row + 1) * p.width);
}

} // namespace dtrain::data
