// The CPU-only build's CUDA runtime: no devices; asking for one is an error
// saying so, and only the calls that need a device pointer (which this build
// never hands out) abort, as broken invariants.
#include "dtrain/cuda/runtime.hpp"

#include <cstdio>
#include <cstdlib>

namespace dtrain::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  std::fprintf(stderr, "dtrain: %s: this build of dtrain has no CUDA support\n", what);
  std::abort();
}
} // namespace

int device_count() { return 0; }
std::string unavailable_reason() { return "dtrain was built without CUDA"; }
std::string device_name(int) { return "none"; }
status set_device(int) { return unavailable("dtrain was built without CUDA"); }
status load_blas() { return unavailable("dtrain was built without CUDA"); }
result<void*> device_malloc(size_t bytes, int index) {
  return unavailable("cannot allocate " + std::to_string(bytes) + " bytes on cuda:" +
                     std::to_string(index) + ": dtrain was built without CUDA");
}
void device_free(void* ptr) {
  if (ptr != nullptr)
    no_cuda("device_free");
}
void copy(void*, const void*, size_t, copy_kind) { no_cuda("copy"); }
void memset_zero(void*, size_t) { no_cuda("memset_zero"); }
status synchronize(const char*) { return unavailable("dtrain was built without CUDA"); }

} // namespace dtrain::cuda
