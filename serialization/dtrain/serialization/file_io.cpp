#include "dtrain/serialization/file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace dtrain::serialization {

namespace {

constexpr size_t crc_piece = size_t{1} << 30;   // zlib's lengths are 32-bit
constexpr size_t write_piece = size_t{8} << 20; // small enough to stay in cache

std::string os_error(const std::string& what, const std::string& path, int err) {
  return what + " " + path + ": " + std::strerror(err);
}

// Writes all of [data, data + n) or returns the errno that stopped it.
int write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t done = ::write(fd, data, n);
    if (done < 0 && errno == EINTR)
      continue;
    if (done <= 0)
      return done < 0 ? errno : EIO;
    data += done;
    n -= static_cast<size_t>(done);
  }
  return 0;
}

std::string temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

} // namespace

uint32_t crc32_of(uint32_t crc, const void* data, size_t n) {
  auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    const size_t piece = std::min(n, crc_piece);
    c = ::crc32(c, p, static_cast<uInt>(piece));
    p += piece;
    n -= piece;
  }
  return static_cast<uint32_t>(c);
}

// ---- mapped_file -------------------------------------------------------------

result<mapped_file> mapped_file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return status(errno == ENOENT ? error_code::not_found : error_code::io_error,
                  os_error("cannot open", path, errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(os_error("cannot stat", path, err));
  }
  mapped_file file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error(os_error("cannot map", path, err));
    }
    file.data_ = static_cast<const char*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
  return file;
}

mapped_file::mapped_file(mapped_file&& other) noexcept
  : path_(std::move(other.path_)),
    data_(std::exchange(other.data_, nullptr)),
    size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

mapped_file::~mapped_file() { release(); }

void mapped_file::release() {
  if (data_ != nullptr)
    ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void mapped_file::expect_sequential_read() const {
  // Advice only: a refusal costs speed, never correctness. (MADV_WILLNEED
  // on top was measured to halve the speed of a cold read here.)
  if (data_ != nullptr)
    ::madvise(const_cast<char*>(data_), size_, MADV_SEQUENTIAL);
}

// ---- atomic_file -------------------------------------------------------------

atomic_file::atomic_file(std::string path, std::string temp, int fd)
  : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}

result<atomic_file> atomic_file::create(const std::string& path) {
  std::string temp = temp_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error(os_error("cannot create a temporary file for", path, errno));
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

status atomic_file::commit(bool sync_dir) {
  // errno is read before close() and unlink() can overwrite it.
  int err = ::fsync(fd_) == 0 ? 0 : errno;
  if (::close(std::exchange(fd_, -1)) != 0 && err == 0)
    err = errno;
  if (err == 0 && ::rename(temp_.c_str(), path_.c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(temp_.c_str());
    return io_error(os_error("cannot commit", path_, err));
  }
  if (!sync_dir)
    return status::ok();
  const size_t slash = path_.rfind('/');
  return sync_directory(slash == std::string::npos ? "." : path_.substr(0, slash));
}

status sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return io_error(os_error("cannot open directory", dir, errno));
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return err == 0 ? status::ok() : io_error(os_error("cannot fsync directory", dir, err));
}

// ---- crc_fd_output -----------------------------------------------------------

void crc_fd_output::write(const void* buffer, size_t size) {
  const char* p = static_cast<const char*>(buffer);
  while (error_.is_ok() && size > 0) {
    const size_t piece = std::min(size, write_piece);
    if (const int err = write_all(fd_, p, piece); err != 0) {
      error_ = io_error(os_error("cannot write", path_, err));
      return;
    }
    crc_ = crc32_of(crc_, p, piece);
    written_ += piece;
    p += piece;
    size -= piece;
  }
}

void crc_fd_output::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  // The segment table and the small segments could go in one writev; the
  // bulk is the large segments, where one write per 8 MiB costs nothing.
  for (const auto& piece : pieces)
    write(piece.begin(), piece.size());
}

} // namespace dtrain::serialization
