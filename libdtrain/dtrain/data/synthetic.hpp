#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// The synthetic regression of Catalyst's distributed tutorial: `samples`
/// rows of `features` values uniform in [0, 1). With `planted` false the
/// targets are uniform in [0, 1) too, exactly as the tutorial has them
/// (nothing to learn beyond the mean); with `planted` true they are
/// x . w + b + noise * normal() for a fixed random w, b, so that a model
/// can be seen to converge.
struct linear_regression_options {
  int64_t samples = 10000;
  int64_t features = 10;
  bool planted = false;
  float noise = 0.01f;
  uint64_t seed = 0;
};

result<std::shared_ptr<tensor_dataset>> make_linear_regression(
    const linear_regression_options& options);

} // namespace dtrain::data
