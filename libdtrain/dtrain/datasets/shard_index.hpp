#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

/// The index of a record-shard set (index.bin; the format is described in
/// shards.hpp): private to shards.cpp and shards_write.cpp. Pure functions on
/// bytes, thread-safe, nothing throws.
namespace dtrain::data::shard_format {

inline constexpr const char* index_name = "index.bin";

/// One shard as the index names it (a file name inside the set's directory).
struct shard_entry {
  std::string file;
  int64_t records = 0;
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};

/// Everything the index holds.
struct index {
  std::string encoding;       // "raw" | "deflate"
  std::string source_name;
  int64_t size = 0, feature_count = 0, target_count = 0, class_count = 0;
  std::vector<int64_t> sample_shape;
  std::vector<shard_entry> shards;
};

/// "shard-00042.bin".
std::string shard_file_name(size_t shard);

/// The index's bytes, its CRC-32 last.
std::string encode(const index& idx);

/// Parses and checks an index read from `path` (named in every error):
/// corrupt_data for a bad magic or version, a checksum mismatch, bytes cut
/// short or left over, an unknown encoding, counts that are negative or do
/// not add up (shard records vs size, shape product vs feature_count), or a
/// shard file name with a '/' in it.
result<index> decode(const std::string& bytes, const std::string& path);

} // namespace dtrain::data::shard_format
