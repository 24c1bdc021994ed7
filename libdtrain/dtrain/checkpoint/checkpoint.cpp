#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/verify.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr const char* prefix = "ckpt-";
constexpr const char* temp_marker = ".tmp-";

// A checkpoint directory's name and where it stands.
struct listed {
  std::string name;
  checkpoint_id id;
};

// What a root holds: its checkpoints, newest first, and the temporary
// directories of saves (finished or not).
struct root_listing {
  std::vector<listed> checkpoints;
  std::vector<std::string> temporaries;
};

// Parses the digits of `text` (at least one, nothing else) into `value`.
bool parse_number(const std::string& text, int64_t& value) {
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return false;
  value = std::stoll(text);
  return true;
}

result<root_listing> list_root(const std::string& root) {
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec == std::errc::no_such_file_or_directory)
    return not_found("checkpoint root " + root + " does not exist");
  root_listing out;
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code kind_ec;
    if (!it->is_directory(kind_ec))
      continue;
    if (is_temporary_name(name))
      out.temporaries.push_back(name);
    else if (auto id = parse_checkpoint_name(name))
      out.checkpoints.push_back({name, *id});
  }
  if (ec)
    return io_error("checkpoint root " + root + ": cannot list: " + ec.message());
  std::sort(out.checkpoints.begin(), out.checkpoints.end(),
            [](const listed& a, const listed& b) { return b.id < a.id; });
  return out;
}

// Every shard's size and checksum against the manifest, on up to one
// thread per core: the first failure in rank order, or ok.
status verify_shards(codec& c, const std::string& dir, const manifest& m) {
  const size_t n = m.shards.size();
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<status> outcomes(n);
  auto work = [&](size_t first) {
    for (size_t i = first; i < n; i += threads)
      outcomes[i] = c.verify_shard(dir, m.shards[i]);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work, t);
  if (threads > 0)
    work(0);
  for (auto& t : pool)
    t.join();
  for (const status& s : outcomes)
    DTRAIN_RETURN_IF_ERROR(s);
  return status::ok();
}

// The manifest of `dir` when it and every shard (size and checksum) are valid.
result<manifest> validate(codec& c, const std::string& dir) {
  DTRAIN_ASSIGN_OR_RETURN(manifest m, c.read_manifest(dir));
  DTRAIN_RETURN_IF_ERROR(verify_shards(c, dir, m));
  return m;
}

// The cheap validity: a consistent manifest and every shard present with
// its recorded size (no bytes read).
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

using candidates = std::vector<std::pair<std::string, manifest>>;  // newest first

// The best of `valid` by `metric`, or null (ties go to the newest).
const std::string* best_by(const candidates& valid, const std::string& metric, bool minimize) {
  const std::string* best = nullptr;
  double best_value = 0;
  for (const auto& [name, m] : valid) {
    auto it = m.metrics.find(metric);
    if (metric.empty() || it == m.metrics.end() || std::isnan(it->second))
      continue;
    if (best == nullptr || better(it->second, best_value, minimize)) {
      best = &name;
      best_value = it->second;
    }
  }
  return best;
}

// Verifies `valid` in full, newest first, until one passes. Returns its
// index (valid.size() when none does) and drops from `valid` the newer ones
// that are corrupt_data, provided one passed: a verification failing for
// every checkpoint says more about the verifier than about them.
size_t drop_corrupt_until_verified(codec& c, const std::string& root, candidates& valid) {
  std::vector<size_t> corrupt;
  size_t good = 0;
  for (; good < valid.size(); ++good) {
    const status s = verify_shards(c, root + "/" + valid[good].first, valid[good].second);
    if (s.is_ok())
      break;
    std::fprintf(stderr, "dtrain: checkpoint retention: %s/%s fails verification: %s\n",
                 root.c_str(), valid[good].first.c_str(), s.to_string().c_str());
    if (s.code() == error_code::corrupt_data)
      corrupt.push_back(good);
  }
  if (good == valid.size())
    return good;
  for (auto it = corrupt.rbegin(); it != corrupt.rend(); ++it)
    valid.erase(valid.begin() + static_cast<std::ptrdiff_t>(*it));
  return good - corrupt.size();
}

// Names (under root) of the checkpoints to keep out of `valid`.
std::vector<std::string> choose_kept(codec& c, const std::string& root, candidates valid,
                                     int keep_last, const std::string& metric, bool minimize) {
  const bool keep_all = keep_last <= 0 || valid.size() <= static_cast<size_t>(keep_last);
  std::vector<std::string> kept;
  if (keep_all) {  // nothing valid goes: no need to read any shard
    for (const auto& v : valid)
      kept.push_back(v.first);
    return kept;
  }
  const size_t good = drop_corrupt_until_verified(c, root, valid);
  const size_t newest = std::min(valid.size(), static_cast<size_t>(keep_last));
  for (size_t i = 0; i < newest; ++i)
    kept.push_back(valid[i].first);
  if (good >= newest && good < valid.size())
    kept.push_back(valid[good].first);
  if (const std::string* best = best_by(valid, metric, minimize);
      best != nullptr && std::find(kept.begin(), kept.end(), *best) == kept.end())
    kept.push_back(*best);
  return kept;
}

// Deletes root/name, recording the first failure in `outcome`.
void remove_directory(const std::string& root, const std::string& name, status& outcome) {
  std::error_code ec;
  fs::remove_all(root + "/" + name, ec);
  if (ec && outcome.is_ok())
    outcome = io_error("checkpoint retention: cannot delete " + root + "/" + name + ": " +
                       ec.message());
}

std::string random_suffix() {
  std::random_device device;
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(device()));
  return hex;
}

} // namespace

std::string checkpoint_name(int64_t epoch, int64_t sequence) {
  char name[64];
  if (sequence == 0)
    std::snprintf(name, sizeof name, "%s%08lld", prefix, static_cast<long long>(epoch));
  else
    std::snprintf(name, sizeof name, "%s%08lld-%04lld", prefix, static_cast<long long>(epoch),
                  static_cast<long long>(sequence));
  return name;
}

bool is_temporary_name(const std::string& name) {
  return name.rfind(prefix, 0) == 0 && name.find(temp_marker) != std::string::npos;
}

std::optional<checkpoint_id> parse_checkpoint_name(const std::string& name) {
  if (name.rfind(prefix, 0) != 0)
    return std::nullopt;
  const std::string rest = name.substr(std::strlen(prefix));
  const size_t dash = rest.find('-');
  checkpoint_id id;
  if (!parse_number(rest.substr(0, dash), id.epoch))
    return std::nullopt;
  if (dash != std::string::npos && !parse_number(rest.substr(dash + 1), id.sequence))
    return std::nullopt;
  return id;
}

result<pending_save> begin_save(const std::string& root, int64_t epoch) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec)
    return io_error("checkpoint root " + root + ": cannot create: " + ec.message());
  DTRAIN_ASSIGN_OR_RETURN(root_listing listing, list_root(root));
  int64_t sequence = 0;
  for (const listed& l : listing.checkpoints)
    if (l.id.epoch == epoch)
      sequence = std::max(sequence, l.id.sequence + 1);
  pending_save save;
  save.dir = root + "/" + checkpoint_name(epoch, sequence);
  for (int attempt = 0; attempt < 8; ++attempt) {
    save.temp = save.dir + temp_marker + random_suffix();
    if (::mkdir(save.temp.c_str(), 0755) == 0)
      return save;
    if (errno != EEXIST)
      break;
  }
  return os_error("cannot create the temporary checkpoint directory", save.temp, errno);
}

status publish(const pending_save& save) {
  return rename_directory_durably(save.temp, save.dir)
      .with_context("publishing checkpoint " + save.dir);
}

void abandon(const pending_save& save) {
  std::error_code ec;
  fs::remove_all(save.temp, ec);  // best effort: retention clears what stays
}

result<std::string> newest_valid(codec& c, const std::string& root,
                                 std::vector<std::string>* skipped) {
  DTRAIN_ASSIGN_OR_RETURN(root_listing listing, list_root(root));
  size_t invalid = 0;
  for (const listed& l : listing.checkpoints) {
    const std::string dir = root + "/" + l.name;
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

result<manifest> verify_checkpoint(codec& c, const std::string& dir) { return validate(c, dir); }

status apply_retention(codec& c, const std::string& root, int keep_last,
                       const std::string& metric, bool minimize) {
  DTRAIN_ASSIGN_OR_RETURN(root_listing listing, list_root(root));
  candidates valid;
  for (const listed& l : listing.checkpoints) {
    auto m = validate_sizes(c, root + "/" + l.name);
    if (m.is_ok())
      valid.emplace_back(l.name, std::move(m).value());
  }
  const std::vector<std::string> kept =
      choose_kept(c, root, std::move(valid), keep_last, metric, minimize);
  status outcome = status::ok();
  for (const listed& l : listing.checkpoints)
    if (std::find(kept.begin(), kept.end(), l.name) == kept.end())
      remove_directory(root, l.name, outcome);
  for (const std::string& name : listing.temporaries)
    remove_directory(root, name, outcome);
  return outcome;
}

std::map<int64_t, std::string> checkpoint_dirs(const std::string& root) {
  std::map<int64_t, std::string> out;
  std::map<int64_t, int64_t> sequence;
  std::error_code ec;
  if (root.empty() || !std::filesystem::is_directory(root, ec))
    return out;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    auto id = parse_checkpoint_name(entry.path().filename().string());
    if (!id || !std::filesystem::exists(entry.path() / "manifest.capnp", ec))
      continue;
    auto seen = sequence.find(id->epoch);
    if (seen == sequence.end() || seen->second < id->sequence) {
      sequence[id->epoch] = id->sequence;
      out[id->epoch] = entry.path().string();
    }
  }
  return out;
}

} // namespace dtrain::checkpoint
