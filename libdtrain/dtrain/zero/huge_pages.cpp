#include "dtrain/zero/huge_pages.hpp"

#include <sys/mman.h>

#include <memory>
#include <string>

namespace dtrain::zero {

result<tensor> huge_page_buffer(int64_t count, const std::string& what) {
  const size_t bytes = (static_cast<size_t>(count) * sizeof(float) + huge_page_bytes - 1) /
                       huge_page_bytes * huge_page_bytes;
  const size_t mapped = bytes + huge_page_bytes;  // room to align
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return status(error_code::resource_exhausted,
                  "cannot map " + std::to_string(mapped) + " bytes of " + what);
  auto at = (reinterpret_cast<uintptr_t>(base) + huge_page_bytes - 1) / huge_page_bytes *
            huge_page_bytes;
  (void)madvise(reinterpret_cast<void*>(at), bytes, MADV_HUGEPAGE);  // a hint: fine if refused
  std::shared_ptr<void> owner(base, [mapped](void* p) { munmap(p, mapped); });
  return tensor::over(reinterpret_cast<float*>(at), {count}, std::move(owner));
}

size_t foreign_pages(const bucket_shard& part, float* base, bool give_back) {
  // Whole huge pages of [begin, own_begin) and [own_end, end); counted as
  // if the buffer began on a huge page when `base` is null.
  auto span = [&](int64_t begin, int64_t end) -> size_t {
    const uintptr_t origin = reinterpret_cast<uintptr_t>(base);
    const uintptr_t first = (origin + static_cast<uintptr_t>(begin) * sizeof(float) +
                             huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
    const uintptr_t last =
        (origin + static_cast<uintptr_t>(end) * sizeof(float)) / huge_page_bytes * huge_page_bytes;
    if (last <= first)
      return 0;
    if (give_back && base != nullptr)
      (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    return last - first;
  };
  return span(part.begin, part.own_begin) + span(part.own_end, part.end);
}

} // namespace dtrain::zero
