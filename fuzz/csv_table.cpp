// The CSV reader (datasets/csv.hpp): read_csv over the input written to a
// file, then gather every row. The first byte picks the options: bit 0 a
// header row, bit 1 classification, bit 2 the first column categorical
// (the file's values), bit 3 missing "mean" (else "error"), bit 4 a .tsv
// name (tab-separated), bit 5 an explicit target (the second column).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dtrain/datasets/csv.hpp"
#include "fuzz_util.hpp"

namespace {

// Column k's name: the header's k-th field as written (unquoted), or k.
std::string column(const std::string& text, bool header, char delimiter, int k) {
  if (!header)
    return std::to_string(k);
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)  // a byte order mark
    return column(text.substr(3), header, delimiter, k);
  const size_t line = std::min(text.find_first_of("\r\n"), text.size());
  size_t begin = 0;
  for (int i = 0; i < k && begin <= line; ++i)
    begin = text.find(delimiter, begin) + 1;  // npos + 1 == 0: no such field
  if (begin == 0 && k > 0)
    return std::to_string(k);
  const size_t end = std::min(text.find(delimiter, begin), line);
  return begin <= end ? text.substr(begin, end - begin) : std::to_string(k);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t flags = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  dtrain::data::csv_options o;
  o.header = flags & 1;
  o.classification = flags & 2;
  const char delimiter = flags & 16 ? '\t' : ',';
  o.path = dtrain::fuzz::scratch_dir() + (flags & 16 ? "/table.tsv" : "/table.csv");
  if (flags & 4)
    o.categorical[column(text, o.header, delimiter, 0)] = {};
  if (flags & 8)
    o.missing = "mean";
  if (flags & 32)
    o.targets = {column(text, o.header, delimiter, 1)};
  dtrain::fuzz::write_file(o.path, data + 1, size - 1);

  auto set = dtrain::data::read_csv(o);
  dtrain::fuzz::show(set ? (*set)->name() + ": " + std::to_string((*set)->size()) + " x " +
                             std::to_string((*set)->feature_count()) + ", classes " +
                             std::to_string((*set)->class_count())
                       : set.error().to_string());
  if (!set)
    return 0;
  const auto& ds = **set;
  // Every row, 64 at a time; a row must gather (the table is in memory).
  const int64_t n = ds.size(), chunk = 64;
  std::vector<float> x(static_cast<size_t>(chunk * std::max<int64_t>(ds.feature_count(), 1)));
  std::vector<float> y(static_cast<size_t>(chunk * std::max<int64_t>(ds.target_count(), 1)));
  std::vector<int64_t> idx(static_cast<size_t>(chunk));
  for (int64_t at = 0; at < n; at += chunk) {
    const int64_t m = std::min(chunk, n - at);
    for (int64_t i = 0; i < m; ++i)
      idx[static_cast<size_t>(i)] = at + i;
    if (auto s = ds.gather(idx.data(), m, x.data(), y.data()); !s) {
      std::fprintf(stderr, "gather failed on a table read_csv accepted: %s\n",
                   s.to_string().c_str());
      std::abort();
    }
  }
  return 0;
}
