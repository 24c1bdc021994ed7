#include "dtrain/serialization/file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace dtrain::serialization {

namespace {

constexpr size_t crc_piece = size_t{1} << 30;   // zlib's lengths are 32-bit
constexpr size_t write_piece = size_t{8} << 20; // small enough to stay in cache

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
    return os_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return os_error("cannot stat", path, err);
  }
  mapped_file file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return os_error("cannot map", path, err);
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

// ---- crc_fd_output -----------------------------------------------------------

void crc_fd_output::write(const void* buffer, size_t size) {
  const char* p = static_cast<const char*>(buffer);
  while (error_.is_ok() && size > 0) {
    const size_t piece = std::min(size, write_piece);
    if (status s = write_all(fd_, p, piece, path_); !s.is_ok()) {
      error_ = std::move(s);
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
