#pragma once

#include <cstddef>
#include <string>

#include "dtrain/core/status.hpp"

/// The part of the CUDA runtime the rest of libdtrain uses, behind a header
/// free of CUDA includes. In a CPU-only build (DTRAIN_HAS_CUDA off) these
/// exist too: available() is false, device_malloc and set_device return
/// unavailable ("built without CUDA"); copy and memset_zero need a device
/// pointer, which such a build never hands out, so reaching them is a
/// broken invariant (abort with a message).
namespace dtrain::cuda {

/// Number of usable CUDA devices; 0 without a driver, a device or a CUDA
/// build. Never fails.
int device_count();
inline bool available() { return device_count() > 0; }

/// Why there is no device, for a skipped test or a refused config:
/// "built without CUDA", "CUDA driver version is insufficient ...", ...
std::string unavailable_reason();

/// Name and compute capability of device `index`, e.g. "NVIDIA H100 (sm_90)".
std::string device_name(int index);

/// Makes `index` the calling thread's current device.
status set_device(int index);

/// cudaMalloc / cudaFree on device `index`. Out of device memory is
/// resource_exhausted naming the size and device; no such device (or no
/// CUDA) is unavailable saying why.
result<void*> device_malloc(size_t bytes, int index);
void device_free(void* ptr);

enum class copy_kind { host_to_device, device_to_host, device_to_device };
/// Synchronous copy on the default stream of the current device.
void copy(void* dst, const void* src, size_t bytes, copy_kind kind);
void memset_zero(void* ptr, size_t bytes);

/// Waits for all work on the current device; a kernel's failure shows here.
status synchronize(const char* context);

/// Loads cuBLAS now. It is loaded on the first GEMM on a GPU, not at start-up,
/// so that a process that never uses a GPU does not pay for it (about 95 MiB
/// and half a second per process). Ok, or why it cannot be loaded;
/// unavailable in a build without CUDA. Needs no device.
status load_blas();

} // namespace dtrain::cuda
