#include "dtrain/dashboard/token.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

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

} // namespace

std::string default_token_path() { return dtrain_home() + "/dashboard-token"; }

result<std::string> load_or_create_token(const std::string& path) {
  const std::string dir = parent_of(path);
  // Twice at most: a file that another process created between our look
  // and our link is read on the second pass.
  for (int pass = 0; pass < 2; ++pass) {
    // Whether it is there is asked before it is read: a file that appears
    // between the two is another process's, whole (linked), and used.
    struct stat st {};
    const bool present = ::lstat(path.c_str(), &st) == 0;
    if (std::string t = existing_token(path); !t.empty())
      return t;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return os_error("creating the dashboard token's directory", dir, errno);
    std::string t = security::random_hex(token_chars / 2);
    const std::string line = t + "\n";
    if (present) {
      // There but unusable (readable by others, malformed, not ours):
      // replaced by a private one.
      DTRAIN_RETURN_IF_ERROR(
          write_file_atomically(path, line.data(), line.size(), durability::file, 0600));
      return t;
    }
    DTRAIN_ASSIGN_OR_RETURN(bool ours, publish_new(path, line));
    if (ours)
      return t;
  }
  return io_error("the dashboard token " + path +
                  " was created by another process but cannot be used (not private, or not a "
                  "token); remove it and start again");
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
