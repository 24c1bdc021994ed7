#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtrain/checkpoint/ownership.hpp"

namespace dtrain::actors {

/// What a trial's checkpoint directory holds when the trial starts again
/// (a resumed sweep, an exploit that failed): the disk half of the tuner's
/// resume point (sweep_resume.cpp), which lists the directory, reads manifests,
/// verifies checkpoints in full and removes some. It blocks on the disk:
/// the tuner runs it on its worker thread, never on its actor's.
struct resume_scan {
  std::map<int64_t, std::string> on_disk;  // the checkpoints left, by epoch
  std::string from;                        // where to restore ("": start over)
  bool unreported = false;  // `from` holds the epoch after the last report: report it first
  int64_t stands_at = 0;    // the epoch the trial's reports stand at now
  int64_t restored_at = 0;  // the epoch of `from` (0 with none)
  std::vector<std::string> notes;  // for the sweep's table, in the order they happened
};

/// Where trial `trial`, whose reports stand at epoch `stands_at`, starts
/// again from its checkpoints in `dir`: the checkpoint of epoch stands_at
/// + 1 when its manifest carries that epoch's training metrics (the driver
/// died between the checkpoint and the report; not when `exploited_here`,
/// an exploit's copy), else its newest checkpoint no newer than stands_at.
/// Checkpoints past the epoch it stands at then are removed (through
/// remove_owned: only inside `own`, marked by `me`). Only a checkpoint
/// that verifies in full is chosen: an invalid one is skipped for the next
/// older, with a note.
resume_scan scan_for_resume(const std::string& trial, const std::string& dir, int64_t stands_at,
                            bool exploited_here, const std::string& own,
                            const checkpoint::owner& me);

/// Removes `dir` (checkpoint::remove_owned under `own`, marked by `me`):
/// "" when it is gone (or was never there), else the table's note saying
/// why it was left in place.
std::string remove_own(const std::string& own, const checkpoint::owner& me,
                       const std::string& dir);

} // namespace dtrain::actors
