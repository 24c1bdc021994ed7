#pragma once

#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// Which NumPy arrays to read as samples. The option names are the keys of
/// an experiment's `data:` section.
struct npy_options {
  /// An .npy path, or an .npz path (then `features_key` names the array).
  std::string features;
  /// An .npy path; or, with .npz features, the name of an array in the same
  /// archive (a value ending in .npy or holding a '/' is a path). Empty: no
  /// targets (target_count() 0).
  std::string targets;
  /// The features' array name inside an .npz.
  std::string features_key = "x";
  /// True: targets are class indices (integers >= 0, one per sample) and
  /// class_count() is their max + 1. False: regression values.
  bool classification = true;
};

/// Opens NumPy arrays as a dataset: features of shape [N, ...] (flattened
/// per sample; sample_shape() is shape[1:], {1} for a 1-d array), targets
/// of shape [N] or [N, ...]. Element types f2 f4 f8, i1-i8, u1-u8 and b1,
/// little-endian or byte-order free, are converted to float in gather().
/// .npy format versions 1, 2 and 3, C order only.
///
/// Memory: an .npy file, and a member that numpy's savez stored
/// uncompressed in an .npz, are MEMORY-MAPPED and converted row by row in
/// gather(), so a set larger than memory works. A member deflated by
/// savez_compressed is inflated into memory once, here (its CRC-32
/// checked). Classification targets are read once here to check them.
///
/// The returned dataset is immutable; gather() is safe from any number of
/// threads and fails only for an index out of range. Mapped files must not
/// be truncated while the dataset lives (the OS would fault the reader).
/// Blocks on file I/O; throws nothing.
///
/// Errors name the file (and the array inside an .npz):
///  - not_found / io_error: a file cannot be opened or mapped; not_found
///    for an array missing from an .npz (its arrays listed);
///  - corrupt_data: bad magic string or version, a header cut short, data
///    shorter ("truncated") or longer than the shape promises, fortran_order
///    True, a complex, object, structured or big-endian dtype (named), a 0-d
///    array, a damaged zip archive or deflated member;
///  - shape_mismatch: features and targets with different N (both named),
///    classification targets with more than one value per sample;
///  - corrupt_data naming the record (0-based) for a classification target
///    that is negative or not an integer;
///  - invalid_argument: no features path, an encrypted or otherwise
///    compressed .npz member.
result<std::shared_ptr<const dataset>> read_npy(const npy_options& options);

} // namespace dtrain::data
