#pragma once

#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/datasets/source.hpp"
#include "dtrain/train/hyperparameters.hpp"
#include "dtrain/train/operator.hpp"

namespace dtrain::train {

/// An experiment's data: section, as it travels among an operator's
/// hyperparameters (keys data.train.KEY, data.validation.KEY and data.KEY):
///
///   data:
///     train: {format: csv, path: /data/train.csv, target: label}
///     validation: {format: csv, path: /data/test.csv, target: label}
///     workers: 2            # loader threads (decoding images wants several)
///     normalize: true       # per-channel mean/std of the train set, one pass
///     standardize: true     # per-feature mean/std (tables)
///     random_crop: 4        # pad by 4, crop back at random (images)
///     horizontal_flip: true # (images)
///     shuffle_window: 65536 # samples; shard sets read a few shards at a time
///
/// Sources and their keys: datasets/source.hpp. The built-in operators use
/// it when present instead of their own data; a plugin's operator can too.
bool has_file_data(const hyperparameters& hp);

/// The pattern operators add to check_known's list ("data.*").
inline const char* file_data_keys() { return "data.*"; }

/// Checks the section's keys and sources without opening a file (an
/// experiment file is checked where it is read; the files may be on the
/// nodes only).
status check_file_data(const hyperparameters& hp);

/// Opens the section's sets (once per process for each source: replicas
/// that are threads of one process share them) and sets parts' train_data,
/// validation_data, transforms, loader_workers and block layout.
/// `classification`: targets are class labels. `owner` names the operator in
/// errors.
status use_file_data(const hyperparameters& hp, bool classification, const std::string& owner,
                     operator_parts& parts);

/// data::open_source, once per process for each (spec, classification):
/// a failed open is not kept.
result<std::shared_ptr<const data::dataset>> shared_source(const data::source_spec& spec,
                                                           const std::string& what,
                                                           bool classification);

/// What a prediction's input names: "validation" or "train" (the
/// operator's own sets), or "source:" + data::source_text(spec) (a file, as
/// `dtrain predict --input FILE` sends it), opened through shared_source
/// and checked against the model's train set (the same sample shape).
result<std::shared_ptr<const data::dataset>> prediction_input(const operator_parts& parts,
                                                              const std::string& input,
                                                              const std::string& owner);

} // namespace dtrain::train
