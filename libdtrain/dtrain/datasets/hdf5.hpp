#pragma once

#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// Where read_hdf5 finds a set inside an HDF5 file.
struct hdf5_options {
  std::string path;
  /// The features: a numeric dataset of shape [N, ...] (any integer or float
  /// type; each row is flattened, sample_shape() is the shape after N, or {1}
  /// for a [N] dataset). A path inside the file ("train/x") works too.
  std::string features = "x";
  /// The targets: a numeric dataset of shape [N] or [N, T]; empty for none
  /// (target_count() 0).
  std::string targets = "y";
  /// Targets are class indices: one per sample, whole numbers >= 0, and
  /// class_count() is the largest + 1. False: float regression targets.
  bool classification = true;
};

/// Opens an HDF5 file (libhdf5, Debian's serial 1.10 build) as a dataset.
/// The targets are read into memory at open (N * T floats); the features stay
/// in the file and gather() reads just the requested rows with a hyperslab
/// selection over the sorted, de-duplicated indices (consecutive runs become
/// one block), converting the file's integer or float type to float32.
///
/// Thread safety: Debian's libhdf5 is not built thread-safe, so every HDF5
/// call made here (open, gather, close) holds one process-wide mutex: gather()
/// is safe from several loader threads, but their file reads run one at a
/// time. HDF5's own error printing is silenced while that mutex is held; its
/// message is folded into the returned status instead.
///
/// Errors, each naming the file and the dataset: not_found for a missing file
/// or a missing dataset (listing the datasets the file has); corrupt_data for
/// a file that is not HDF5; invalid_argument for a non-numeric dataset
/// (strings, compounds: the type class is named), features of rank 0 or
/// targets of rank other than 1 or 2, or classification targets that are not
/// whole numbers >= 0 (the sample named); shape_mismatch when features and
/// targets have different N; io_error when a read fails (in gather, naming
/// the first record of the failed read).
result<std::shared_ptr<const dataset>> read_hdf5(const hdf5_options& options);

} // namespace dtrain::data
