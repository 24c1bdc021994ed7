#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <capnp/message.h>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/serialization/file_io.hpp"

/// What the two halves of the Cap'n Proto checkpoint codec share
/// (capnp_checkpoint.cpp writes, capnp_checkpoint_read.cpp reads). Not part
/// of serialization/'s interface.
namespace dtrain::serialization {

/// Why `m` is not a consistent manifest (schema version, world size against
/// shards, ranks 0..w-1 each once, plain shard file names, buffer names
/// unique), or "" when it is.
std::string manifest_problem(const checkpoint::manifest& m);

/// The mapped shard's size and CRC-32 against `shard`: corrupt_data naming
/// the file and both values when they differ.
status verify_mapped(const mapped_file& file, const checkpoint::shard_info& shard);

/// Reader options for a message of `file_bytes`: a traversal limit from the
/// size (the default 64 MiB would refuse big shards), the default nesting.
capnp::ReaderOptions reader_limits(size_t file_bytes);

/// Why `pieces` (checkpoint::piece or target_piece) of a buffer of `count`
/// elements cannot be written or filled: one outside [0, count) or without
/// data, or two that overlap; "" when they are fine. Empty pieces never
/// overlap.
template <class Piece>
std::string pieces_problem(const std::vector<Piece>& pieces, int64_t count) {
  std::vector<std::pair<int64_t, int64_t>> spans;  // begin, end
  for (const auto& p : pieces) {
    if (p.begin < 0 || p.count < 0 || p.count > count - p.begin ||
        (p.count > 0 && p.data == nullptr))
      return "piece at " + std::to_string(p.begin) + " of " + std::to_string(p.count) +
             " elements is outside its " + std::to_string(count) + " or has no data";
    if (p.count > 0)
      spans.emplace_back(p.begin, p.begin + p.count);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second)
      return "pieces overlap from element " + std::to_string(spans[i].first);
  return "";
}

} // namespace dtrain::serialization
