#include "dtrain/checkpoint/checkpoint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>

#include "dtrain/core/check.hpp"

namespace dtrain::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr const char* prefix = "ckpt-";

// The ckpt-* subdirectories of `root` (names only), newest first: the
// zero-padded epochs make the name order the epoch order.
result<std::vector<std::string>> list_checkpoints(const std::string& root) {
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return not_found("checkpoint root " + root + " does not exist");
  std::vector<std::string> names;
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code kind_ec;
    if (name.rfind(prefix, 0) == 0 && it->is_directory(kind_ec))
      names.push_back(name);
  }
  if (ec)
    return io_error("checkpoint root " + root + ": cannot list: " + ec.message());
  std::sort(names.begin(), names.end(), std::greater<>());
  return names;
}

// The manifest of `dir` when it and every shard (size and checksum) are valid.
result<manifest> validate(codec& c, const std::string& dir) {
  DTRAIN_ASSIGN_OR_RETURN(manifest m, c.read_manifest(dir));
  for (const shard_info& s : m.shards)
    DTRAIN_RETURN_IF_ERROR(c.verify_shard(dir, s));
  return m;
}

// The cheap validity retention uses: a consistent manifest and every shard
// present with its recorded size. Checksums are left to restore time
// (newest_valid), so that retention does not re-read every kept checkpoint
// after each save; a damaged one it keeps is still skipped when restoring.
result<manifest> validate_sizes(codec& c, const std::string& dir) {
  DTRAIN_ASSIGN_OR_RETURN(manifest m, c.read_manifest(dir));
  for (const shard_info& s : m.shards) {
    const std::string path = dir + "/" + s.file;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      return corrupt_data("checkpoint shard " + path + ": " + std::strerror(errno));
    if (static_cast<uint64_t>(st.st_size) != s.size)
      return corrupt_data("checkpoint shard " + path + " has " + std::to_string(st.st_size) +
                          " bytes, the manifest says " + std::to_string(s.size));
  }
  return m;
}

// Whether `a` is a better value of a metric than `b`.
bool better(double a, double b, bool minimize) { return minimize ? a < b : a > b; }

// Names (under root) of the checkpoints to keep: the newest keep_last valid
// ones (all when keep_last <= 0) and the best valid one by `metric`.
std::vector<std::string> choose_kept(const std::vector<std::pair<std::string, manifest>>& valid,
                                     int keep_last, const std::string& metric, bool minimize) {
  std::vector<std::string> kept;
  const size_t newest = keep_last <= 0 ? valid.size()
                                       : std::min(valid.size(), static_cast<size_t>(keep_last));
  for (size_t i = 0; i < newest; ++i)
    kept.push_back(valid[i].first);
  const std::string* best = nullptr;
  double best_value = 0;
  for (const auto& [name, m] : valid) {  // newest first: ties go to the newest
    auto it = m.metrics.find(metric);
    if (metric.empty() || it == m.metrics.end() || std::isnan(it->second))
      continue;
    if (best == nullptr || better(it->second, best_value, minimize)) {
      best = &name;
      best_value = it->second;
    }
  }
  if (best != nullptr && std::find(kept.begin(), kept.end(), *best) == kept.end())
    kept.push_back(*best);
  return kept;
}

} // namespace

std::string checkpoint_name(int64_t epoch) {
  char name[32];
  std::snprintf(name, sizeof name, "%s%08lld", prefix, static_cast<long long>(epoch));
  return name;
}

result<std::string> newest_valid(codec& c, const std::string& root,
                                 std::vector<std::string>* skipped) {
  DTRAIN_ASSIGN_OR_RETURN(auto names, list_checkpoints(root));
  size_t invalid = 0;
  for (const std::string& name : names) {
    const std::string dir = root + "/" + name;
    auto m = validate(c, dir);
    if (m.is_ok())
      return dir;
    ++invalid;
    if (skipped != nullptr)
      skipped->push_back(dir + ": " + m.error().to_string());
  }
  return not_found("no valid checkpoint under " + root + " (" + std::to_string(invalid) +
                   " invalid)");
}

status apply_retention(codec& c, const std::string& root, int keep_last,
                       const std::string& metric, bool minimize) {
  DTRAIN_ASSIGN_OR_RETURN(auto names, list_checkpoints(root));
  std::vector<std::pair<std::string, manifest>> valid;
  for (const std::string& name : names) {
    auto m = validate_sizes(c, root + "/" + name);
    if (m.is_ok())
      valid.emplace_back(name, std::move(m).value());
  }
  const std::vector<std::string> kept = choose_kept(valid, keep_last, metric, minimize);
  status outcome = status::ok();
  for (const std::string& name : names) {
    if (std::find(kept.begin(), kept.end(), name) != kept.end())
      continue;
    std::error_code ec;
    fs::remove_all(root + "/" + name, ec);
    if (ec && outcome.is_ok())
      outcome = io_error("checkpoint retention: cannot delete " + root + "/" + name + ": " +
                         ec.message());
  }
  return outcome;
}

} // namespace dtrain::checkpoint
