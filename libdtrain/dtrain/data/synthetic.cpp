#include "dtrain/data/synthetic.hpp"

#include <string>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"

namespace dtrain::data {

namespace {

// Separate streams for the features, the planted model and the noise, so
// that turning `planted` on leaves the features bit-for-bit unchanged.
constexpr uint64_t feature_stream = 0;
constexpr uint64_t weight_stream = 1;
constexpr uint64_t noise_stream = 2;

status check_options(const linear_regression_options& options) {
  if (options.samples < 0)
    return invalid_argument("linear_regression_options.samples must be >= 0, got " +
                            std::to_string(options.samples));
  if (options.features < 1)
    return invalid_argument("linear_regression_options.features must be >= 1, got " +
                            std::to_string(options.features));
  if (!(options.noise >= 0.0f))
    return invalid_argument("linear_regression_options.noise must be >= 0, got " +
                            std::to_string(options.noise));
  return status::ok();
}

// y = x . w + b + noise * normal(), with w and b drawn as standard normals.
void plant_targets(const linear_regression_options& options, const float* x, float* y) {
  rng weights(hash64(options.seed, weight_stream));
  std::vector<float> w(static_cast<size_t>(options.features));
  for (auto& v : w)
    v = weights.normal();
  const float b = weights.normal();
  rng noise(hash64(options.seed, noise_stream));
  for (int64_t i = 0; i < options.samples; ++i) {
    const float* row = x + i * options.features;
    float dot = b;
    for (int64_t j = 0; j < options.features; ++j)
      dot += row[j] * w[static_cast<size_t>(j)];
    y[i] = dot + options.noise * noise.normal();
  }
}

} // namespace

result<std::shared_ptr<tensor_dataset>> make_linear_regression(
    const linear_regression_options& options) {
  DTRAIN_RETURN_IF_ERROR(check_options(options));
  tensor x = tensor::empty({options.samples, options.features});
  tensor y = tensor::empty({options.samples});
  rng features(hash64(options.seed, feature_stream));
  float* xs = x.data();
  for (int64_t i = 0; i < x.numel(); ++i)
    xs[i] = features.uniform();
  if (options.planted) {
    plant_targets(options, xs, y.data());
  } else {
    // The tutorial's targets: independent of x, uniform in [0, 1).
    rng targets(hash64(options.seed, noise_stream));
    for (int64_t i = 0; i < options.samples; ++i)
      y.data()[i] = targets.uniform();
  }
  std::string name = std::string("linear regression ") + (options.planted ? "planted " : "") +
                     "(" + std::to_string(options.samples) + "x" +
                     std::to_string(options.features) + ", seed " +
                     std::to_string(options.seed) + ")";
  return tensor_dataset::create(std::move(x), std::move(y), std::move(name));
}

} // namespace dtrain::data
