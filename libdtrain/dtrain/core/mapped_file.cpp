#include "dtrain/core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "dtrain/core/files.hpp"

namespace dtrain {

result<mapped_file> mapped_file::open(const std::string& path, bool sequential) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return os_error("cannot open", path, errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || S_ISDIR(info.st_mode)) {
    const int err = S_ISDIR(info.st_mode) ? EISDIR : errno;
    ::close(fd);
    return os_error("cannot read", path, err);
  }
  mapped_file out;
  out.size = static_cast<size_t>(info.st_size);
  if (out.size > 0) {
    const int flags = MAP_PRIVATE | (sequential ? MAP_POPULATE : 0);
    void* p = ::mmap(nullptr, out.size, PROT_READ, flags, fd, 0);
    const int err = errno;
    if (p == MAP_FAILED) {
      ::close(fd);
      return os_error("cannot map", path, err);
    }
    if (sequential)
      ::madvise(p, out.size, MADV_SEQUENTIAL);
    const size_t size = out.size;
    out.owner = std::shared_ptr<const void>(
        p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
    out.data = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping keeps the file
  return out;
}

} // namespace dtrain
