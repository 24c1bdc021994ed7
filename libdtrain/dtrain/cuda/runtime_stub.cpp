// The CPU-only build's CUDA runtime: no devices, and a clear message for
// anyone who asks for device memory anyway.
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
void* device_malloc(size_t, int) { no_cuda("device_malloc"); }
void device_free(void*) { no_cuda("device_free"); }
void copy(void*, const void*, size_t, copy_kind) { no_cuda("copy"); }
void memset_zero(void*, size_t) { no_cuda("memset_zero"); }
status synchronize(const char*) { return unavailable("dtrain was built without CUDA"); }

} // namespace dtrain::cuda
