#pragma once

#include <string>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::checkpoint {

/// The manifest of the checkpoint `dir` when it and every shard (size and
/// checksum) are valid: the full check newest_valid() makes of each
/// candidate, for a caller that picked a checkpoint by name (a resumed
/// trial's) and must not restore it unverified. not_found when `dir` has
/// no manifest, corrupt_data naming the file at fault otherwise. Blocks on
/// reading every shard.
result<manifest> verify_checkpoint(codec& c, const std::string& dir);

} // namespace dtrain::checkpoint
