#pragma once

#include <cstddef>
#include <string>

#include "dtrain/core/status.hpp"

/// Files the way dtrain writes them: errors that name the path and the
/// OS's reason, atomic and durable replacement of a file, durable renames
/// of directories. The one place for these facts (the checkpoint codec and
/// the checkpoint model use it). Nothing here throws; every call blocks on
/// file I/O.
namespace dtrain {

/// The directory `path` is in: "a/b" for "a/b/c", "." for a bare name,
/// "/" for "/c". Text only; nothing is looked up.
std::string parent_of(const std::string& path);

/// dtrain's own directory on this host: $DTRAIN_HOME, else ~/.dtrain
/// ($HOME/.dtrain, /tmp/.dtrain without a HOME). Pid files and logs of
/// `dtrain start`, and the experiment store. Not created here.
std::string dtrain_home();

/// "what path: strerror(err)" as a status: not_found for ENOENT, io_error
/// for everything else.
status os_error(const std::string& what, const std::string& path, int err);

/// Writes all of [data, data + n) to `fd`, through short writes and EINTR;
/// an error names `path`.
status write_all(int fd, const void* data, size_t n, const std::string& path);

/// fsyncs a directory, so that the files created, renamed or removed in it
/// survive a crash.
status sync_directory(const std::string& dir);

/// How much of a replacement survives a crash: nothing more than other
/// processes see (visible), the file's bytes (file), or also its name in
/// the directory (file_and_directory).
enum class durability { visible, file, file_and_directory };

/// Replaces `path` atomically: bytes go to a temporary file next to it
/// (".NAME.tmp-PID-N", hidden and unique per process and call), and
/// commit() makes them as durable as asked and renames the file over
/// `path`; readers see the old file or the new one, never a part.
/// Destroying an uncommitted file removes the temporary. The temporary is
/// created with `mode` (less the umask), so a secret is never readable by
/// others, not even for a moment. Errors name `path`. Move-only; one
/// thread at a time.
class atomic_file {
public:
  static result<atomic_file> create(const std::string& path, unsigned mode = 0644);

  atomic_file(atomic_file&& other) noexcept;
  atomic_file& operator=(atomic_file&&) = delete;
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  status commit(durability d);

private:
  atomic_file(std::string path, std::string temp, int fd);

  std::string path_, temp_;
  int fd_ = -1;
};

/// atomic_file in one call: `path` holds [data, data + n) afterwards, with
/// `mode` (less the umask).
status write_file_atomically(const std::string& path, const void* data, size_t n, durability d,
                             unsigned mode = 0644);

/// Renames the directory `from` to `to`, refusing (io_error naming both)
/// when `to` already exists, then fsyncs the directory of `to` so that the
/// rename survives a crash. Where the file system cannot rename without
/// replacing, an existing `to` is checked for first (not atomic with the
/// rename: callers must own `to`'s parent).
status rename_directory_durably(const std::string& from, const std::string& to);

} // namespace dtrain
