// Copying a checkpoint into another trial's root (PBT's exploit): a
// temporary directory filled and verified, the target's checkpoints
// cleared, one durable rename.
#include "dtrain/checkpoint/checkpoint_copy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr int attempts = 3;

// One attempt's failure: `retry` when the source vanished or changed
// under it (worth starting again), not when the target refused.
struct failure {
  status error;
  bool retry = false;
};

// An attempt's outcome: the copy's path, or why not.
struct attempt_result {
  std::string path;
  failure failed;
};

attempt_result source_changed(status s) { return {"", {std::move(s), true}}; }
attempt_result target_failed(status s) { return {"", {std::move(s), false}}; }

// Removes a temporary directory unless released (after its rename).
class temp_directory {
public:
  explicit temp_directory(std::string path) : path_(std::move(path)) {}
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;
  ~temp_directory() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);  // best effort: the next copy clears what stays
    }
  }
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

private:
  std::string path_;
};

// Copies the file `from` to `to` (a new name in the temporary directory),
// durably. A source that cannot be read is `retry` (retention may have
// deleted it); a target that cannot be written is not.
failure copy_file(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return {os_error("cannot open", from, errno), true};
  auto out = atomic_file::create(to);
  if (!out.is_ok()) {
    ::close(in);
    return {out.error(), false};
  }
  std::vector<char> buffer(size_t{1} << 20);
  failure f;
  for (;;) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      f = {os_error("cannot read", from, errno), true};
      break;
    }
    if (n == 0)
      break;
    if (status s = write_all(out->fd(), buffer.data(), static_cast<size_t>(n), to); !s.is_ok()) {
      f = {s, false};
      break;
    }
  }
  ::close(in);
  if (f.error.is_ok())
    f.error = out->commit(durability::file);
  return f;
}

// The regular files of the checkpoint directory `dir`.
result<std::vector<std::string>> files_of(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> out;
  fs::directory_iterator it(dir, ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    std::error_code kind_ec;
    if (it->is_regular_file(kind_ec))
      out.push_back(it->path().filename().string());
  }
  if (ec)
    return ec == std::errc::no_such_file_or_directory
               ? not_found("checkpoint " + dir + " is gone")
               : io_error("checkpoint " + dir + ": cannot list: " + ec.message());
  return out;
}

bool same_shards(const manifest& a, const manifest& b) {
  if (a.shards.size() != b.shards.size() || a.epoch != b.epoch || a.step != b.step)
    return false;
  for (size_t i = 0; i < a.shards.size(); ++i) {
    const shard_info &x = a.shards[i], &y = b.shards[i];
    if (x.rank != y.rank || x.file != y.file || x.size != y.size || x.checksum != y.checksum)
      return false;
  }
  return true;
}

// The copy in `temp` in full (manifest, every shard's size and checksum),
// and the same checkpoint as the source's manifest `expected` describes.
status verify_copy(codec& c, const std::string& temp, const manifest& expected,
                   const std::string& source) {
  DTRAIN_ASSIGN_OR_RETURN(manifest copied, c.read_manifest(temp));
  for (const shard_info& s : copied.shards)
    DTRAIN_RETURN_IF_ERROR(c.verify_shard(temp, s));
  if (!same_shards(copied, expected))
    return corrupt_data("checkpoint " + source + " changed while it was copied");
  return status::ok();
}

// Removes every checkpoint and temporary directory under `root` but `keep`.
status clear_target(const std::string& root, const std::string& keep) {
  std::error_code ec;
  std::vector<std::string> doomed;
  fs::directory_iterator it(root, ec);
  for (const fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != keep && (parse_checkpoint_name(name) || is_temporary_name(name)))
      doomed.push_back(name);
  }
  if (ec)
    return io_error("checkpoint root " + root + ": cannot list: " + ec.message());
  for (const std::string& name : doomed) {
    fs::remove_all(root + "/" + name, ec);
    if (ec)
      return io_error("cannot delete " + root + "/" + name + ": " + ec.message());
  }
  return status::ok();
}

result<std::string> make_temp_directory(const std::string& target_root, const std::string& name) {
  std::error_code ec;
  fs::create_directories(target_root, ec);
  if (ec)
    return io_error("checkpoint root " + target_root + ": cannot create: " + ec.message());
  std::string pattern = target_root + "/" + name + ".tmp-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    return os_error("cannot create a temporary directory under", target_root, errno);
  return pattern;
}

attempt_result copy_once(codec& c, const std::string& source, const std::string& target_root) {
  // The manifest first: what the copy must turn out to be.
  auto expected = c.read_manifest(source);
  if (!expected.is_ok())
    return source_changed(expected.error());
  const std::string name = fs::path(source).filename().string();
  auto made = make_temp_directory(target_root, name);
  if (!made.is_ok())
    return target_failed(made.error());
  temp_directory temp(*made);
  auto files = files_of(source);
  if (!files.is_ok())
    return source_changed(files.error());
  for (const std::string& file : *files)
    if (failure f = copy_file(source + "/" + file, temp.path() + "/" + file); !f.error.is_ok())
      return {"", f};
  if (status s = sync_directory(temp.path()); !s.is_ok())
    return target_failed(s);
  if (status s = verify_copy(c, temp.path(), *expected, source); !s.is_ok())
    return source_changed(s);
  if (status s = clear_target(target_root, fs::path(temp.path()).filename().string()); !s.is_ok())
    return target_failed(s);
  const std::string dir = target_root + "/" + name;
  if (status s = rename_directory_durably(temp.path(), dir); !s.is_ok())
    return target_failed(s);
  temp.release();
  return {dir, {}};
}

} // namespace

result<std::string> copy_newest_valid(codec& c, const std::string& source_root,
                                      const std::string& target_root) {
  const std::string context =
      "copying the newest valid checkpoint of " + source_root + " into " + target_root;
  std::error_code ec;
  if (fs::weakly_canonical(source_root, ec) == fs::weakly_canonical(target_root, ec) && !ec)
    return invalid_argument(context + ": the source and the target are the same directory");
  status last;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    auto source = newest_valid(c, source_root);
    if (!source.is_ok())
      return source.error().with_context(context);
    attempt_result r = copy_once(c, *source, target_root);
    if (r.failed.error.is_ok())
      return r.path;
    if (!r.failed.retry)
      return r.failed.error.with_context(context);
    last = r.failed.error;
    std::fprintf(stderr, "dtrain: %s: attempt %d of %d: %s\n", context.c_str(), attempt, attempts,
                 last.to_string().c_str());
  }
  return last.with_context(context + " (the source checkpoint changed during " +
                           std::to_string(attempts) + " attempts)");
}

} // namespace dtrain::checkpoint
