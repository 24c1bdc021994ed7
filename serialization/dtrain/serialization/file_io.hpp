#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <kj/io.h>

#include "dtrain/core/files.hpp"
#include "dtrain/core/status.hpp"

/// File plumbing of the Cap'n Proto codecs (internal to serialization/):
/// read-only mappings, CRC-32, and an output stream that hashes what it
/// writes. Atomic replacement and OS errors are core/files.hpp's. Nothing
/// here throws.
namespace dtrain::serialization {

/// CRC-32 as zlib computes it (polynomial 0xEDB88320, the one of gzip and
/// PNG), continuing `crc` (0 to start) over `n` bytes; zlib is fed pieces
/// of at most 1 GiB.
uint32_t crc32_of(uint32_t crc, const void* data, size_t n);

/// A read-only, private mapping of a whole file, unmapped by the
/// destructor. An empty file maps to no bytes (size() 0, data() null).
/// Move-only; not thread-safe to mutate, safe to read from many threads.
class mapped_file {
public:
  /// not_found when `path` does not exist, io_error naming it otherwise.
  static result<mapped_file> open(const std::string& path);

  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// Tells the kernel the mapping is read once, front to back (read-ahead).
  void expect_sequential_read() const;

private:
  mapped_file() = default;
  void release();

  std::string path_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

/// A kj::OutputStream over a file descriptor for capnp::writeMessage():
/// it writes in pieces of at most 8 MiB and folds each piece into a CRC-32
/// (crc32_of) right after writing it, while the bytes are still in cache,
/// so the file's checksum costs no second pass over memory. Errors are
/// recorded, not thrown (after the first one, writes do nothing); check
/// error() afterwards. Does not own the descriptor; one thread at a time.
class crc_fd_output final : public kj::OutputStream {
public:
  crc_fd_output(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  void write(const void* buffer, size_t size) override;
  void write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;

  uint32_t crc() const { return crc_; }
  uint64_t bytes_written() const { return written_; }
  const status& error() const { return error_; }

private:
  int fd_;
  std::string path_;
  uint32_t crc_ = 0;
  uint64_t written_ = 0;
  status error_;
};

} // namespace dtrain::serialization
