#pragma once

#include <cstdint>

/// Data parallelism for the CPU kernels that are not GEMMs (im2col, col2im,
/// pooling, element-wise activations): the same thread budget as
/// OpenBLAS's (blas_threads(), which blas_share sets to this replica's
/// share of the host's cores), so a layer's loops use the cores its GEMMs
/// use and no more.
namespace dtrain {

/// The untyped form of parallel_for: fn(context, begin, end).
void parallel_for_ranges(int64_t n, int64_t grain, void* context,
                         void (*fn)(void*, int64_t, int64_t));

/// Calls body(begin, end) on contiguous ranges that cover [0, n) exactly
/// once, in parallel over up to blas_threads() threads (the caller and
/// workers of a process-wide pool), and returns when every range is done.
/// Each range but the last holds at least `grain` indices, so small loops
/// stay on the calling thread. Ranges must be independent: body may not
/// write what another range reads or writes. The loop runs on the calling
/// thread alone when the pool is busy with another caller's loop (two
/// replicas in one process), when called from inside a loop's body, or in
/// a process forked after the pool started (it has none of its parent's
/// workers). Allocates nothing (body is passed by reference); body must
/// not throw.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
  parallel_for_ranges(n, grain, const_cast<void*>(static_cast<const void*>(&body)),
                      [](void* context, int64_t begin, int64_t end) {
                        (*static_cast<const Body*>(context))(begin, end);
                      });
}

/// A grain for loops whose items touch `floats_per_item` floats each (a
/// sample's image, a row): ranges of at least 64 Ki floats, below which
/// waking another thread costs more than it saves.
inline int64_t grain_for(int64_t floats_per_item) {
  constexpr int64_t floats_per_range = int64_t{1} << 16;
  return floats_per_item >= floats_per_range
             ? 1
             : floats_per_range / (floats_per_item < 1 ? 1 : floats_per_item);
}

} // namespace dtrain
