// The NumPy reader (datasets/npy.hpp): read_npy on the input written as an
// .npz (when it starts as a zip archive does, "PK") or as an .npy, then
// gather every row. The first byte picks the options: bit 0
// classification; bit 1, for an .npz, targets from its array "y" (the
// features are array "x").
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dtrain/datasets/npy.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t flags = data[0];
  ++data;
  --size;
  const bool npz = size >= 2 && std::memcmp(data, "PK", 2) == 0;
  dtrain::data::npy_options o;
  o.features = dtrain::fuzz::scratch_dir() + (npz ? "/arrays.npz" : "/array.npy");
  o.classification = flags & 1;
  if (npz && (flags & 2))
    o.targets = "y";
  dtrain::fuzz::write_file(o.features, data, size);

  auto set = dtrain::data::read_npy(o);
  dtrain::fuzz::show(set ? (*set)->name() + ": " + std::to_string((*set)->size()) + " x " +
                             std::to_string((*set)->feature_count()) + ", classes " +
                             std::to_string((*set)->class_count())
                       : set.error().to_string());
  if (!set)
    return 0;
  const auto& ds = **set;
  // Every row, 64 at a time (rows are converted from the mapped file).
  const int64_t n = ds.size(), chunk = 64;
  std::vector<float> x(static_cast<size_t>(chunk * std::max<int64_t>(ds.feature_count(), 1)));
  std::vector<float> y(static_cast<size_t>(chunk * std::max<int64_t>(ds.target_count(), 1)));
  std::vector<int64_t> idx(static_cast<size_t>(chunk));
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t m = std::min(chunk, n - at);
    for (int64_t i = 0; i < m; ++i)
      idx[static_cast<size_t>(i)] = at + i;
    if (auto s = ds.gather(idx.data(), m, x.data(), y.data()); !s) {
      std::fprintf(stderr, "gather failed on arrays read_npy accepted: %s\n",
                   s.to_string().c_str());
      std::abort();
    }
  }
  return 0;
}
