// The record-shard reader (datasets/shards.hpp): open_shards on a
// directory whose index.bin and first shard file come from the input, then
// gather every record. Input: two bytes, little-endian, whose low 15 bits
// are the index's length, then the index, then the shard's bytes (written
// as shard-00000.bin). The harness sets the index's trailing CRC-32, so
// that the parsing behind it is reached; with the top bit (0x8000) set and
// an index that decodes, it also re-encodes the index with shard 0 named
// shard-00000.bin and carrying the shard's real size and CRC-32, so that
// the records behind the shard's checksum are reached too. Records wider
// than 64 MiB are not gathered (a caller could not hold one).
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dtrain/datasets/shard_index.hpp"
#include "dtrain/datasets/shards.hpp"
#include "fuzz_util.hpp"

namespace {

namespace format = dtrain::data::shard_format;

uint32_t crc_of(const uint8_t* data, size_t size) {
  return static_cast<uint32_t>(::crc32(::crc32(0L, Z_NULL, 0), data, static_cast<uInt>(size)));
}

// The index bytes with their last four bytes replaced by the CRC-32 of the
// rest (little-endian), as format::encode writes it.
std::string with_crc(std::string index) {
  if (index.size() < 4)
    return index;
  const uint32_t crc =
      crc_of(reinterpret_cast<const uint8_t*>(index.data()), index.size() - 4);
  for (int i = 0; i < 4; ++i)
    index[index.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  return index;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  const bool fix_shard = data[1] & 0x80;
  const size_t index_size = std::min<size_t>(size - 2, (data[0] | (data[1] & 0x7f) << 8));
  std::string index = with_crc(std::string(reinterpret_cast<const char*>(data + 2), index_size));
  const uint8_t* shard = data + 2 + index_size;
  const size_t shard_size = size - 2 - index_size;

  const std::string dir = dtrain::fuzz::scratch_dir() + "/set";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directory(dir, ec);
  if (ec)
    std::abort();
  if (fix_shard) {
    auto idx = format::decode(index, "index");
    if (idx && !idx->shards.empty()) {
      idx->shards[0].file = format::shard_file_name(0);
      idx->shards[0].bytes = static_cast<int64_t>(shard_size);
      idx->shards[0].crc32 = crc_of(shard, shard_size);
      index = format::encode(*idx);
    }
  }
  dtrain::fuzz::write_file(dir + "/" + format::index_name,
                           reinterpret_cast<const uint8_t*>(index.data()), index.size());
  dtrain::fuzz::write_file(dir + "/" + format::shard_file_name(0), shard, shard_size);

  auto set = dtrain::data::open_shards(dir);
  dtrain::fuzz::show(set ? (*set)->name() + ": " + std::to_string((*set)->size()) + " x " +
                             std::to_string((*set)->feature_count()) + ", classes " +
                             std::to_string((*set)->class_count())
                       : set.error().to_string());
  if (!set)
    return 0;
  const auto& ds = **set;
  if (ds.feature_count() + ds.target_count() > (int64_t{16} << 20))
    return 0;
  // Every record, one at a time: a damaged shard fails its gather (a
  // status), the harness goes on to the next record.
  std::vector<float> x(static_cast<size_t>(std::max<int64_t>(ds.feature_count(), 1)));
  std::vector<float> y(static_cast<size_t>(std::max<int64_t>(ds.target_count(), 1)));
  for (int64_t i = 0; i < ds.size(); ++i) {
    if (!ds.gather(&i, 1, x.data(), y.data()))
      break;
  }
  return 0;
}
