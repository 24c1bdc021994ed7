#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"

namespace dtrain::data {

/// Changes one sample's features in place: normalisation, a random crop, a
/// flip. A loader applies its transforms, in order, in its worker threads,
/// after the dataset gathered the batch and before the batch is handed out.
///
/// Random transforms draw only from `gen`, which the loader seeds from
/// (seed, epoch, sample index): a sample gets the same augmentation in the
/// same epoch whichever replica trains it, however many replicas there are,
/// and again when the epoch is resumed from a checkpoint. Transforms are
/// immutable after construction (apply is const and called from several
/// threads at once).
class transform {
public:
  virtual ~transform() = default;
  /// For logs and errors ("random_crop(28, padding 4)").
  virtual std::string name() const = 0;
  /// `features` holds one sample shaped `shape` (the dataset's
  /// sample_shape(): {C, H, W} for images, {F} for table rows).
  virtual void apply(float* features, const std::vector<int64_t>& shape, rng& gen) const = 0;
};

using transform_list = std::vector<std::shared_ptr<const transform>>;

} // namespace dtrain::data
