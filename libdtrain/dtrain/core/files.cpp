#include "dtrain/core/files.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain {

std::string dtrain_home() {
  if (const char* home = std::getenv("DTRAIN_HOME"))
    return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home != nullptr ? user_home : "/tmp") + "/.dtrain";
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

namespace {

// ".NAME.tmp-PID-N" next to `path`: hidden, and unique across processes
// (pid) and calls (counter).
std::string temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

} // namespace

status os_error(const std::string& what, const std::string& path, int err) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  return err == ENOENT ? not_found(std::move(message)) : io_error(std::move(message));
}

status write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t done = ::write(fd, p, n);
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      return os_error("cannot write", path, done < 0 ? errno : EIO);
    p += done;
    n -= static_cast<size_t>(done);
  }
  return status::ok();
}

status sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return os_error("cannot open directory", dir, errno);
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err == 0 ? status::ok() : os_error("cannot fsync directory", dir, err);
}

// ---- atomic_file -------------------------------------------------------------

atomic_file::atomic_file(std::string path, std::string temp, int fd)
  : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}

result<atomic_file> atomic_file::create(const std::string& path, unsigned mode) {
  std::string temp = temp_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return os_error("cannot create a temporary file for", path, errno);
  return atomic_file(path, std::move(temp), fd);
}

atomic_file::atomic_file(atomic_file&& other) noexcept
  : path_(std::move(other.path_)), temp_(std::move(other.temp_)),
    fd_(std::exchange(other.fd_, -1)) {}

atomic_file::~atomic_file() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

status atomic_file::commit(durability d) {
  if (fd_ < 0)
    return status(error_code::internal, "atomic file " + path_ + " committed twice");
  // errno is read before close() and unlink() can overwrite it.
  int err = d == durability::visible || ::fsync(fd_) == 0 ? 0 : errno;
  if (::close(std::exchange(fd_, -1)) != 0 && err == 0)
    err = errno;
  if (err == 0 && ::rename(temp_.c_str(), path_.c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(temp_.c_str());
    return io_error("cannot commit " + path_ + ": " + std::strerror(err));
  }
  return d == durability::file_and_directory ? sync_directory(parent_of(path_)) : status::ok();
}

status write_file_atomically(const std::string& path, const void* data, size_t n, durability d,
                             unsigned mode) {
  DTRAIN_ASSIGN_OR_RETURN(atomic_file file, atomic_file::create(path, mode));
  if (status s = write_all(file.fd(), data, n, path); !s.is_ok())
    return s;
  return file.commit(d);
}

status rename_directory_durably(const std::string& from, const std::string& to) {
  int err = ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0
                ? 0
                : errno;
  if (err == EINVAL || err == ENOSYS) {  // a file system without RENAME_NOREPLACE
    struct stat st {};
    if (::stat(to.c_str(), &st) == 0)
      err = EEXIST;
    else
      err = ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  }
  if (err != 0)
    return io_error("cannot rename " + from + " to " + to + ": " + std::strerror(err));
  return sync_directory(parent_of(to));
}

} // namespace dtrain
