#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/data/transform.hpp"

namespace dtrain::data {

// The concrete transforms. Each is built by a static create() that checks
// its arguments (invalid_argument naming the one at fault) and returns an
// immutable, thread-safe object. A transform also states which sample
// shapes it accepts (check_shape): call it once when the transform list is
// put together, against the dataset's sample_shape(); apply() on a shape
// check_shape refuses is a broken invariant and aborts.

/// Per-channel mean and standard deviation (population, divisor N), as
/// compute_normalization and compute_standardization return them.
struct moments {
  std::vector<float> mean;
  std::vector<float> std;
};

/// x = (x - mean[c]) / std[c], per channel c of a {C, H, W} sample (one
/// value each: the same for every feature; C values: one per channel of
/// axis 0, so a flat {F} sample takes one value or F, one per feature).
class normalize final : public transform {
public:
  /// Fails when mean and std differ in length, are empty, or a std is not
  /// positive and finite.
  static result<std::shared_ptr<const normalize>> create(std::vector<float> mean,
                                                         std::vector<float> stddev);
  std::string name() const override;
  void apply(float* features, const std::vector<int64_t>& shape, rng& gen) const override;
  /// shape_mismatch unless there is one value, or shape[0] values.
  status check_shape(const std::vector<int64_t>& shape) const;

private:
  normalize(std::vector<float> mean, std::vector<float> stddev);
  std::vector<float> mean_;
  std::vector<float> inverse_std_;
  std::vector<float> std_;
};

/// The mean and std over every sample of `data` for normalize: one value
/// each (per_channel false: over all features), or one per channel of its
/// sample_shape() (axis 0; for {C, H, W}, over the H x W pixels of each
/// channel of every sample). One pass: the set is gathered in chunks of a
/// few MiB and folded with Chan's pairwise update of (count, mean, M2) in
/// double, so a large set neither needs memory nor loses precision. A
/// constant channel (std 0) gets std 1, as scikit-learn's StandardScaler
/// does, so normalize stays defined. Errors: invalid_argument for an empty
/// set; the dataset's gather status (with the set's name) otherwise.
result<moments> compute_normalization(const dataset& data, bool per_channel);

/// x[f] = (x[f] - mean[f]) / std[f] for each feature f of a table row:
/// mean and std hold feature_count() values each.
class standardize final : public transform {
public:
  /// Fails when mean and std differ in length, are empty, or a std is not
  /// positive and finite.
  static result<std::shared_ptr<const standardize>> create(std::vector<float> mean,
                                                           std::vector<float> stddev);
  std::string name() const override;
  void apply(float* features, const std::vector<int64_t>& shape, rng& gen) const override;
  /// shape_mismatch unless the shape's product is the number of values.
  status check_shape(const std::vector<int64_t>& shape) const;

private:
  standardize(std::vector<float> mean, std::vector<float> stddev);
  std::vector<float> mean_;
  std::vector<float> inverse_std_;
};

/// Per-feature mean and std over every sample of `data` for standardize,
/// computed as compute_normalization does (one pass, constant features get
/// std 1).
result<moments> compute_standardization(const dataset& data);

/// Pads a {C, H, W} sample (or {H, W}: one channel) with `padding` zeros
/// on each side and crops H x W back out at an offset drawn from gen:
/// rows first, then columns, each gen.below(2 * padding + 1) -- two draws
/// per sample whatever the padding, so the transforms after it draw the
/// same values for any padding. Padding 0 is the identity.
class random_crop final : public transform {
public:
  /// Fails for a negative padding.
  static result<std::shared_ptr<const random_crop>> create(int64_t padding);
  std::string name() const override;
  void apply(float* features, const std::vector<int64_t>& shape, rng& gen) const override;
  /// shape_mismatch unless the sample has 2 or 3 axes.
  status check_shape(const std::vector<int64_t>& shape) const;
  int64_t padding() const { return padding_; }

private:
  explicit random_crop(int64_t padding) : padding_(padding) {}
  int64_t padding_;
};

/// Mirrors a {C, H, W} (or {H, W}) sample left to right with probability
/// p: one draw per sample (gen.uniform() < p flips).
class horizontal_flip final : public transform {
public:
  /// Fails unless 0 <= p <= 1.
  static result<std::shared_ptr<const horizontal_flip>> create(float p = 0.5f);
  std::string name() const override;
  void apply(float* features, const std::vector<int64_t>& shape, rng& gen) const override;
  /// shape_mismatch unless the sample has 2 or 3 axes.
  status check_shape(const std::vector<int64_t>& shape) const;

private:
  explicit horizontal_flip(float p) : p_(p) {}
  float p_;
};

} // namespace dtrain::data
