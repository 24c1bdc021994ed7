#pragma once

#include "dtrain/core/status.hpp"
#include "dtrain/train/hyperparameters.hpp"
#include "dtrain/train/operator.hpp"

namespace dtrain::train {

/// The transform keys of an experiment's data: section (file_data.hpp):
/// data.normalize (true: the train set's mean and std, per channel for
/// images, over all features for rows), data.standardize (true: per
/// feature, for tables), data.random_crop (padding in pixels),
/// data.horizontal_flip (true, or a probability). Checks their values.
status check_transform_keys(const hyperparameters& hp);

/// Builds parts.train_transforms (crop, flip, then normalisation, in that
/// order, as torchvision pipelines do) and parts.validation_transforms
/// (the same normalisation only) for parts.train_data, checking each
/// against the sample shape. The statistics are computed in one pass over
/// the train set, once per process and set.
status add_file_transforms(const hyperparameters& hp, operator_parts& parts);

} // namespace dtrain::train
