#include "dtrain/driver/tuner/resume_scan.hpp"

#include "dtrain/cluster/messages.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/verify.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

namespace dtrain::actors {

namespace {

// The checkpoint in `dir` when it verifies in full (manifest, every
// shard's size and checksum), else "" with the reason in `notes`.
std::string verified(const std::string& trial, const std::string& dir,
                     std::vector<std::string>& notes) {
  auto m = checkpoint::verify_checkpoint(*serialization::default_checkpoint_codec(), dir);
  if (m)
    return dir;
  notes.push_back("trial " + trial + ": skipping the invalid checkpoint " + dir + " (" +
                  m.error().message() + "); trying the next older one");
  return "";
}

} // namespace

std::string remove_own(const std::string& own, const checkpoint::owner& me,
                       const std::string& dir) {
  status removed = checkpoint::remove_owned(own, me, dir);
  return removed ? "" : "left " + dir + " in place: " + removed.message();
}

resume_scan scan_for_resume(const std::string& trial, const std::string& dir, int64_t stands_at,
                            bool exploited_here, const std::string& own,
                            const checkpoint::owner& me) {
  resume_scan out;
  out.on_disk = checkpoint::checkpoint_dirs(dir);
  out.stands_at = stands_at;
  std::string unreported;
  if (auto next = out.on_disk.find(stands_at + 1); next != out.on_disk.end() && !exploited_here)
    if (auto m = serialization::default_checkpoint_codec()->read_manifest(next->second))
      if (epoch_from_manifest(m->metrics, stands_at + 1))
        unreported = verified(trial, next->second, out.notes);
  if (!unreported.empty())
    ++out.stands_at;
  // Checkpoints past that epoch were saved by a run whose reports of them
  // were lost: those epochs train again, and the trainer's own recovery
  // must not jump to them.
  for (auto it = out.on_disk.upper_bound(out.stands_at); it != out.on_disk.end();) {
    if (std::string note = remove_own(own, me, it->second); !note.empty())
      out.notes.push_back(note);
    it = out.on_disk.erase(it);
  }
  if (!unreported.empty()) {
    out.from = unreported;
    out.unreported = true;
    out.restored_at = out.stands_at;
    return out;
  }
  for (auto it = out.on_disk.rbegin(); it != out.on_disk.rend() && out.from.empty(); ++it)
    if (!(out.from = verified(trial, it->second, out.notes)).empty())
      out.restored_at = it->first;
  return out;
}

} // namespace dtrain::actors
