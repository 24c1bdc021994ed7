#include "dtrain/dashboard/token.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <optional>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::dashboard {

namespace {

constexpr size_t token_chars = 32;

bool well_formed(const std::string& t) {
  if (t.size() != token_chars)
    return false;
  for (char c : t)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

// The token in `path` when the file is private and holds one; "" else.
std::string existing_token(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 ||
      st.st_uid != ::getuid())
    return "";
  std::ifstream in(path);
  std::string t;
  std::getline(in, t);
  return well_formed(t) ? t : "";
}

// Publishes `bytes` as `path` unless a file is there already: a private
// temporary next to it is written whole and fsynced, then linked to
// `path`, which fails (EEXIST) when another process was first, so readers
// never see a part and exactly one of racing writers wins. true: ours is
// there; false: another was.
result<bool> publish_new(const std::string& path, const std::string& bytes) {
  const std::string temp = parent_of(path) + "/.dashboard-token.tmp-" +
                           std::to_string(::getpid()) + "-" + security::random_hex(8);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return os_error("creating a temporary file for the dashboard token", temp, errno);
  status written = write_all(fd, bytes.data(), bytes.size(), temp);
  int err = written.is_ok() && ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  if (written.is_ok() && err == 0 && ::link(temp.c_str(), path.c_str()) != 0) {
    err = errno;
    // A file system without hard links: a rename that refuses to replace.
    if (err == EPERM || err == EOPNOTSUPP || err == ENOSYS)
      err = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0
                ? 0
                : errno;
  }
  ::unlink(temp.c_str());
  if (!written.is_ok())
    return written;
  if (err == EEXIST)
    return false;
  if (err != 0)
    return os_error("creating the dashboard token", path, err);
  return true;
}

// Holds an exclusive flock on a directory until destroyed; none where the
// file system refuses one (the caller goes on without it).
class directory_lock {
public:
  explicit directory_lock(const std::string& dir)
    : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~directory_lock() {
    if (fd_ >= 0)
      ::close(fd_);  // releases the lock
  }
  directory_lock(const directory_lock&) = delete;
  directory_lock& operator=(const directory_lock&) = delete;

private:
  int fd_;
};

// Removes `path` if it is still the file `seen` (its lstat when it was found
// unusable), so that a file someone else put there since is left alone.
status remove_if_unchanged(const std::string& path, const struct stat& seen) {
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0)
    return errno == ENOENT ? status::ok()
                           : os_error("looking at the dashboard token", path, errno);
  if (now.st_dev != seen.st_dev || now.st_ino != seen.st_ino)
    return status::ok();  // replaced meanwhile: publish_new finds it there
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return os_error("removing the unusable dashboard token", path, errno);
  return status::ok();
}

} // namespace

std::string default_token_path() { return dtrain_home() + "/dashboard-token"; }

result<std::string> load_or_create_token(const std::string& path) {
  const std::string dir = parent_of(path);
  // Each pass either returns or sees the file change under it (another
  // starter published or replaced one), which a few starters at once cannot
  // keep doing for long.
  constexpr int max_passes = 8;
  for (int pass = 0; pass < max_passes; ++pass) {
    // Looked at before it is read: what is removed below is this file and
    // no later one.
    struct stat seen {};
    const bool present = ::lstat(path.c_str(), &seen) == 0;
    if (std::string t = existing_token(path); !t.empty())
      return t;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return os_error("creating the dashboard token's directory", dir, errno);
    // There but unusable (readable by others, malformed, not ours): removed,
    // and a new one created exclusively like a first one. Starters that
    // found the same unusable file take turns under a lock on the directory
    // from their last look to their new file: the first replaces it, the
    // others find its token whole and use it (the identity check alone could
    // be fooled: the new file may get the removed one's inode number). Where
    // the file system gives no lock, only that check remains.
    std::optional<directory_lock> lock;
    if (present) {
      lock.emplace(dir);
      if (std::string t = existing_token(path); !t.empty())
        return t;
      DTRAIN_RETURN_IF_ERROR(remove_if_unchanged(path, seen));
    }
    std::string t = security::random_hex(token_chars / 2);
    DTRAIN_ASSIGN_OR_RETURN(bool ours, publish_new(path, t + "\n"));
    if (ours)
      return t;
  }
  return io_error("the dashboard token " + path + " changed under each of " +
                  std::to_string(max_passes) +
                  " tries to read or create it (other processes writing it at the same time?); "
                  "start again");
}

bool token_matches(std::string_view presented, std::string_view token) {
  if (presented.size() != token.size() || token.empty())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>(presented[i] ^ token[i]);
  return diff == 0;
}

} // namespace dtrain::dashboard
