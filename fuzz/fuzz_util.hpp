#pragma once

// Helpers shared by the harnesses: a scratch directory of this process
// (removed at exit) and whole-file writes. A harness that must hand a file
// to the code under test writes the input there.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace dtrain::fuzz {

/// This process's scratch directory under $TMPDIR (or /tmp), made on first
/// use and removed when the process exits normally.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtrain-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      std::abort();
    static struct remover {
      std::string path;
      ~remover() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    } r{pattern};
    return pattern;
  }();
  return dir;
}

/// Writes `size` bytes to `path`, replacing it; aborts when it cannot
/// (the harness's environment is broken, not the code under test).
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    std::abort();
  size_t at = 0;
  while (at < size) {
    const ssize_t n = ::write(fd, data + at, size - at);
    if (n <= 0)
      std::abort();
    at += static_cast<size_t>(n);
  }
  ::close(fd);
}

/// With DTRAIN_FUZZ_SHOW set, prints what a reader made of the input (to
/// check that seeds are accepted: `DTRAIN_FUZZ_SHOW=1 bin/fuzz_NAME corpus/NAME/*`).
inline void show(const std::string& text) {
  static const bool on = std::getenv("DTRAIN_FUZZ_SHOW") != nullptr;
  if (on)
    std::fprintf(stderr, "fuzz: %s\n", text.c_str());
}

} // namespace dtrain::fuzz
