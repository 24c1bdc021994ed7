#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/hash.hpp"

namespace dtrain::rendezvous {

namespace {

using std::chrono::steady_clock;

/// Closes the descriptor it owns (releasing any flock on it).
class unique_fd {
public:
  explicit unique_fd(int fd) : fd_(fd) {}
  ~unique_fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  int get() const { return fd_; }
  /// Closes now and reports close()'s errno (0 if fine): a failed close
  /// can mean the data never reached the file.
  int close() {
    int err = ::close(fd_) == 0 ? 0 : errno;
    fd_ = -1;
    return err;
  }

private:
  int fd_;
};

status os_error(const std::string& what, const std::string& path, int err) {
  return io_error("file store: cannot " + what + " '" + path + "': " + std::strerror(err));
}

/// Keeps [A-Za-z0-9._-] and writes every other byte as %XX, behind a "k_"
/// so that no key becomes ".", "..", the lock file or a temporary file.
/// Names past the 255-byte file name limit keep a prefix plus a hash of the
/// whole key ('~' never occurs in an unhashed name, so the two cannot meet).
std::string encode_key(const std::string& key) {
  static const char hex[] = "0123456789ABCDEF";
  std::string name = "k_";
  for (unsigned char c : key) {
    bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    if (safe) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += hex[c >> 4];
      name += hex[c & 15];
    }
  }
  if (name.size() <= 200)
    return name;
  const uint64_t h = hash::fnv1a(key);
  std::string tail = "~";
  for (int shift = 60; shift >= 0; shift -= 4)
    tail += hex[(h >> shift) & 15];
  return name.substr(0, 180) + tail;
}

/// The file's bytes, or nullopt if it does not exist.
result<std::optional<bytes>> read_value(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT)
      return std::optional<bytes>();
    return os_error("open", path, errno);
  }
  bytes value;
  char buffer[4096];
  for (;;) {
    ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got == 0)
      break;
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return os_error("read", path, errno);
    }
    value.insert(value.end(), buffer, buffer + got);
  }
  return std::optional<bytes>(std::move(value));
}

status write_all(int fd, const bytes& value, const std::string& path) {
  size_t done = 0;
  while (done < value.size()) {
    ssize_t wrote = ::write(fd, value.data() + done, value.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0)
      return os_error("write", path, errno);
    done += static_cast<size_t>(wrote);
  }
  return status::ok();
}

result<bool> exists(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0)
    return true;
  if (errno == ENOENT)
    return false;
  return os_error("stat", path, errno);
}

/// Calls `ready` until it says true (returns true), fails (returns the
/// error) or the deadline passes (returns false). Sleeps 1 ms after the
/// first try, doubling up to 20 ms: quick when the peer is quick, cheap on
/// the file system when it is slow.
result<bool> poll_until(steady_clock::time_point deadline, const std::function<result<bool>()>& ready) {
  auto pause = std::chrono::duration_cast<steady_clock::duration>(milliseconds(1));
  const auto longest = std::chrono::duration_cast<steady_clock::duration>(milliseconds(20));
  for (;;) {
    DTRAIN_ASSIGN_OR_RETURN(bool done, ready());
    if (done)
      return true;
    auto now = steady_clock::now();
    if (now >= deadline)
      return false;
    std::this_thread::sleep_for(std::min(pause, deadline - now));
    pause = std::min(pause * 2, longest);
  }
}

} // namespace

result<std::unique_ptr<file_store>> file_store::open(const std::string& directory) {
  if (directory.empty())
    return invalid_argument("file store: the directory name is empty");
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return io_error("file store: cannot create directory '" + directory + "': " + ec.message());
  if (!std::filesystem::is_directory(directory, ec))
    return io_error("file store: '" + directory + "' is not a directory");
  return std::unique_ptr<file_store>(new file_store(directory));
}

std::string file_store::path_of(const std::string& key) const {
  return dir_ + "/" + encode_key(key);
}

status file_store::write_atomically(const std::string& path, const bytes& value) const {
  // Unique across processes (pid) and threads (counter). The name starts
  // with '.', which no encoded key does. No fsync: rendezvous values need
  // not survive a machine crash, only be seen whole by other processes.
  static std::atomic<uint64_t> next_id{0};
  std::string temp = dir_ + "/.tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(next_id.fetch_add(1));
  unique_fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    return os_error("create", temp, errno);
  status written = write_all(fd.get(), value, temp);
  int close_err = fd.close();
  if (written.is_ok() && close_err != 0)
    written = os_error("close", temp, close_err);
  if (written.is_ok() && ::rename(temp.c_str(), path.c_str()) != 0)
    written = os_error("rename a temporary file to", path, errno);
  if (!written.is_ok())
    ::unlink(temp.c_str());
  return written;
}

status file_store::set(const std::string& key, const bytes& value, milliseconds) {
  return write_atomically(path_of(key), value);
}

result<bytes> file_store::get(const std::string& key, milliseconds timeout) {
  const std::string path = path_of(key);
  std::optional<bytes> value;
  auto read_if_there = [&]() -> result<bool> {
    DTRAIN_ASSIGN_OR_RETURN(value, read_value(path));
    return value.has_value();
  };
  DTRAIN_ASSIGN_OR_RETURN(bool found, poll_until(steady_clock::now() + timeout, read_if_there));
  if (!found)
    return detail::missing_keys_error({key}, timeout);
  return std::move(*value);
}

result<int64_t> file_store::add(const std::string& key, int64_t delta, milliseconds timeout) {
  const std::string lock_path = dir_ + "/.lock";
  unique_fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0)
    return os_error("open lock file", lock_path, errno);
  // Each open() is its own open file description, so the lock excludes
  // other threads of this process as well as other processes.
  // Non-blocking attempts until the deadline: a holder that hangs (stopped
  // process) must not hang us.
  auto locked = [&]() -> result<bool> {
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0)
      return true;
    if (errno == EWOULDBLOCK || errno == EINTR)
      return false;
    return os_error("lock", lock_path, errno);
  };
  DTRAIN_ASSIGN_OR_RETURN(bool got, poll_until(steady_clock::now() + timeout, locked));
  if (!got)
    return status(error_code::timeout, "file store: timed out after " +
                                           std::to_string(timeout.count()) +
                                           " ms waiting for the lock " + lock_path +
                                           " to add to key '" + key + "'");
  const std::string path = path_of(key);
  DTRAIN_ASSIGN_OR_RETURN(std::optional<bytes> current, read_value(path));
  DTRAIN_ASSIGN_OR_RETURN(int64_t sum, detail::add_to_counter(
                                           key, current ? &*current : nullptr, delta));
  DTRAIN_RETURN_IF_ERROR(write_atomically(path, to_bytes(std::to_string(sum))));
  return sum;  // the lock goes with the descriptor
}

status file_store::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  // Keys are never deleted, so a key seen once need not be checked again.
  std::vector<std::string> missing = keys;
  auto all_present = [&]() -> result<bool> {
    for (size_t i = missing.size(); i-- > 0;) {
      DTRAIN_ASSIGN_OR_RETURN(bool found, exists(path_of(missing[i])));
      if (found)
        missing.erase(missing.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return missing.empty();
  };
  DTRAIN_ASSIGN_OR_RETURN(bool done, poll_until(steady_clock::now() + timeout, all_present));
  return done ? status::ok() : detail::missing_keys_error(missing, timeout);
}

result<bool> file_store::check(const std::string& key) { return exists(path_of(key)); }

} // namespace dtrain::rendezvous
