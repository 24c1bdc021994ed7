#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// A data source as an experiment file or a command line names it: string
/// keys and values, `format` and `path` and the reader's options (lists as
/// "a,b" or "[a, b]"; a nested map's keys joined with '.', as
/// `categorical.color`). The formats and their keys:
///
///   csv, tsv   path, delimiter, header, targets (or target), ignore,
///              categorical.COLUMN, class_names, missing
///   npy, npz   path (the features' .npy or the .npz), targets (a .npy, or
///              the array in the .npz), features_key
///   images     path (one folder per class), height, width, fit, channels,
///              classes
///   hdf5       path, features, targets (dataset names)
///   shards     path (a directory written by `dtrain data pack`)
///   idx        path (the Fashion-MNIST IDX directory), split (train|test)
///
/// and for every format: `shape` (the sample shape to view rows as, e.g.
/// [1, 28, 28] for image rows read from a table; its product must be the
/// row width), `scale` (multiplies every feature, e.g. 0.00392156 for
/// 8-bit pixels) and `cache` (true: keep every sample in memory as floats
/// once read, so that only the first epoch reads and decodes; at most
/// `cache_mb`, default 8192, else an error naming the size).
using source_spec = std::map<std::string, std::string>;

/// Checks `spec`'s format and keys without touching a file (an unknown
/// format or key is an invalid_argument naming `what` and the key, and
/// listing the keys the format takes). `what` names the source in
/// messages ("data.train").
status check_source(const source_spec& spec, const std::string& what);

/// Opens the source. `classification`: targets are class indices (one per
/// sample) rather than regression values, for the readers that read
/// labels. Errors name `what`, the file and the fault.
result<std::shared_ptr<const dataset>> open_source(const source_spec& spec,
                                                   const std::string& what,
                                                   bool classification = true);

/// The keys under `prefix` + '.' of `values`, with the prefix taken off
/// (the train: part of an experiment's data: section, which travels among
/// its hyperparameters as data.train.KEY).
source_spec sub_spec(const std::map<std::string, std::string>& values, const std::string& prefix);

/// `spec` as one string (KEY=VALUE lines), to travel where a string does
/// (a prediction's input), and back; parse fails on a line without '='.
std::string source_text(const source_spec& spec);
result<source_spec> parse_source_text(const std::string& text);

/// The format a path's name implies: csv, tsv, npy, npz, hdf5 (.h5,
/// .hdf5), shards (a directory with index.bin), images (another
/// directory); "" when nothing fits.
std::string format_of_path(const std::string& path);

/// A view of `base` whose samples have shape `shape` (the same number of
/// features) and whose features are multiplied by `scale`.
result<std::shared_ptr<const dataset>> view_dataset(std::shared_ptr<const dataset> base,
                                                    std::vector<int64_t> shape, float scale);

} // namespace dtrain::data
