#pragma once

#include <cstddef>
#include <cstdint>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"
#include "dtrain/zero/shard_layout.hpp"

/// Host memory that ZeRO gives back to the system between uses: the other
/// ranks' parts of the gradients (stage 2) and of the parameters (stage 3).
namespace dtrain::zero {

/// The unit memory is given back in: a transparent huge page.
constexpr size_t huge_page_bytes = size_t{2} << 20;

/// `count` zeroed floats of private memory on 2 MiB boundaries, backed by
/// transparent huge pages where the kernel allows (madvise mode): freed
/// and faulted back a huge page at a time, which costs a few percent of
/// what 4 KiB pages cost (measured in docs/zero.md). Pages are touched
/// only when written. `what` names the memory in the error
/// (resource_exhausted) when it cannot be mapped.
result<tensor> huge_page_buffer(int64_t count, const std::string& what);

/// The whole huge pages of `part`'s chunks other ranks own, in a buffer
/// that starts at `base` (on a huge page): given back to the system
/// (MADV_DONTNEED: they read as zeros until written again) when `give_back`,
/// only counted otherwise. Bytes.
size_t foreign_pages(const bucket_shard& part, float* base, bool give_back);

} // namespace dtrain::zero
