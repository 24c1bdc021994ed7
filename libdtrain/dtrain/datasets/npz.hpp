#pragma once

#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/datasets/npy_format.hpp"

/// The .npz layer of the .npy reader (internal to datasets/): finding one
/// member of a zip archive (zip64 included) as numpy's savez and
/// savez_compressed write them.
namespace dtrain::data::npy_detail {

/// The bytes of member `member` ("x.npy") of the zip image `archive` read
/// from `path`. A stored member is a view into the archive's mapping (no
/// copy); a deflated one (savez_compressed) is inflated into memory and its
/// CRC-32 checked. Errors name `path` and the member: not_found listing the
/// archive's arrays; corrupt_data for a damaged archive (no end record,
/// entries or data past the end, a bad inflate or CRC); invalid_argument for
/// an encrypted member or a compression other than stored and deflate.
result<byte_view> npz_member(const byte_view& archive, const std::string& member,
                             const std::string& path);

} // namespace dtrain::data::npy_detail
