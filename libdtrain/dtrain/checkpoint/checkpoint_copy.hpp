#pragma once

#include <string>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::checkpoint {

/// Copies the newest valid checkpoint under `source_root` into
/// `target_root` (created when missing), as a PBT exploit needs: the
/// exploiting trial continues from a copy that it owns, so the source
/// trial's retention cannot delete it afterwards (ray#9036, ray#28509).
///
/// Steps: newest_valid(source_root) (checksums verified); its files are
/// copied into a temporary directory under target_root ("NAME.tmp-..."),
/// each fsynced; the copy is verified in full through the codec (the
/// manifest, then every shard's size and checksum) and must record the
/// same shards as the source's manifest read before copying; then every
/// checkpoint and leftover temporary directory under target_root is
/// removed, and the temporary directory is renamed to target_root/NAME
/// (NAME: the source checkpoint's name) and target_root fsynced. Other
/// names under target_root are left alone. Only the checkpoint's regular
/// files are copied (the codec writes no subdirectories).
///
/// Returns target_root/NAME. A crash leaves no partial checkpoint under a
/// checkpoint name: before the removals the target is as it was (plus a
/// temporary directory, cleared by retention or the next copy), after the
/// rename the copy is there whole; between the two some of the target's
/// own checkpoints may be gone.
///
/// When the source checkpoint vanishes or changes during the copy (the
/// source trial's retention or a new save), the copy starts again from
/// newest_valid(), three attempts in all. Errors name both roots:
/// not_found when source_root holds no valid checkpoint (the target is
/// then untouched), the last attempt's error after three changed sources,
/// io_error when the target cannot be written or cleared (without
/// retrying), invalid_argument when both roots are the same directory. On any error the temporary directory is removed.
///
/// Blocks on file I/O; the caller must own target_root (no save, restore
/// or retention there meanwhile). Reads of source_root may race with its
/// owner's saves and retention.
result<std::string> copy_newest_valid(codec& c, const std::string& source_root,
                                      const std::string& target_root);

} // namespace dtrain::checkpoint
