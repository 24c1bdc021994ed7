#include "dtrain/core/memory.hpp"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

#include "dtrain/core/files.hpp"

namespace dtrain {

result<int64_t> resident_memory_bytes() {
  const std::string path = "/proc/self/status";
  std::ifstream in(path);
  if (!in)
    return os_error("reading", path, errno);
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kb) == 1)
      return static_cast<int64_t>(kb) * 1024;
  }
  return not_found(path + ": no VmRSS line");
}

} // namespace dtrain
