// The CUDA build's runtime: runtime.hpp on top of cudart.
#include "dtrain/cuda/runtime.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "dtrain/cuda/check.hpp"
#include "dtrain/cuda/cublas_api.hpp"

namespace dtrain::cuda {

namespace {

/// What the first cudaGetDeviceCount() said. Probed once per process: the
/// set of visible devices does not change while it runs, and a failed driver
/// initialization would fail the same way again.
struct device_probe {
  int count = 0;
  std::string reason;
};

const device_probe& probe() {
  static const device_probe result = [] {
    device_probe p;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError(); // clear it, so that the next launch check is not misled
      p.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    } else if (n <= 0) {
      p.reason = "no CUDA device found";
    } else {
      p.count = n;
    }
    return p;
  }();
  return result;
}

cudaMemcpyKind to_cuda(copy_kind kind) {
  switch (kind) {
    case copy_kind::host_to_device: return cudaMemcpyHostToDevice;
    case copy_kind::device_to_host: return cudaMemcpyDeviceToHost;
    case copy_kind::device_to_device: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

const char* to_string(copy_kind kind) {
  switch (kind) {
    case copy_kind::host_to_device: return "host to device";
    case copy_kind::device_to_host: return "device to host";
    case copy_kind::device_to_device: return "device to device";
  }
  return "unknown";
}

} // namespace

int device_count() { return probe().count; }

std::string unavailable_reason() { return probe().reason; }

std::string device_name(int index) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return "cuda:" + std::to_string(index) + " (" + cudaGetErrorName(err) + ")";
  }
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ")";
}

status set_device(int index) {
  int count = device_count();
  if (count == 0)
    return unavailable("cuda:" + std::to_string(index) + ": " + unavailable_reason());
  if (index < 0 || index >= count)
    return status(error_code::out_of_range, "cuda:" + std::to_string(index) +
                                                ": there are " + std::to_string(count) +
                                                " CUDA devices");
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(index),
                              "set_device(" + std::to_string(index) + ")");
  return status::ok();
}

result<void*> device_malloc(size_t bytes, int index) {
  if (index < 0 || index >= device_count())
    return set_device(index);  // fails, saying why there is no such device
  // Allocate on `index` without moving the calling thread off its device.
  int current = -1;
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&current), "device_malloc: cudaGetDevice");
  if (current != index)
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(index),
                                "device_malloc: cannot use cuda:" + std::to_string(index));
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err != cudaSuccess)
    cudaGetLastError();  // clear it: the next launch check must not see it
  if (current != index)
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(current), "device_malloc: restoring the device");
  const std::string what = std::to_string(bytes) + " bytes on cuda:" + std::to_string(index);
  if (err == cudaErrorMemoryAllocation)
    return resource_exhausted("out of device memory allocating " + what);
  DTRAIN_CUDA_RETURN_IF_ERROR(err, "device_malloc: allocating " + what);
  return ptr;
}

void device_free(void* ptr) {
  if (ptr == nullptr)
    return;
  cudaError_t err = cudaFree(ptr);
  if (err == cudaSuccess)
    return;
  cudaGetLastError();
  // Called from destructors, so it reports rather than aborts: after the
  // runtime has shut down (a static tensor) the memory went with the context,
  // and after a kernel fault every call fails with the fault, which the
  // caller's synchronize() has already turned into a status.
  if (err != cudaErrorCudartUnloading)
    std::fprintf(stderr, "dtrain: %s (memory not freed)\n",
                 detail::cuda_error_text(err, __FILE__, __LINE__, "device_free").c_str());
}

void copy(void* dst, const void* src, size_t bytes, copy_kind kind) {
  if (bytes == 0)
    return;
  DTRAIN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, to_cuda(kind)),
                    std::string("copy of ") + std::to_string(bytes) + " bytes " +
                        to_string(kind));
}

void memset_zero(void* ptr, size_t bytes) {
  if (bytes == 0)
    return;
  DTRAIN_CUDA_CHECK(cudaMemset(ptr, 0, bytes),
                    "memset_zero of " + std::to_string(bytes) + " bytes");
}

status synchronize(const char* context) {
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), context);
  return status::ok();
}

status load_blas() { return load_cublas(); }

} // namespace dtrain::cuda
