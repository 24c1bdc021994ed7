#include "dtrain/datasets/shard_index.hpp"

#include <zlib.h>

#include <cstdio>
#include <cstring>

namespace dtrain::data::shard_format {

namespace {

constexpr char magic[8] = {'D', 'T', 'R', 'S', 'H', 'I', 'D', 'X'};
constexpr uint32_t version = 1;
// Far above any real set, low enough that a damaged count cannot make the
// reader reserve gigabytes before noticing the bytes are missing.
constexpr uint64_t max_count = 1u << 24;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_i64(std::string& out, int64_t value) {
  const auto v = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_string(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads little-endian fields off the front of a byte string; the first read
// past the end sets `short_` and yields zeros from then on.
class reader {
public:
  explicit reader(const std::string& bytes) : bytes_(bytes) {}

  uint64_t uint(int width) {
    if (short_ || bytes_.size() - pos_ < static_cast<size_t>(width)) {
      short_ = true;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < width; ++i)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += static_cast<size_t>(width);
    return v;
  }
  uint32_t u32() { return static_cast<uint32_t>(uint(4)); }
  int64_t i64() { return static_cast<int64_t>(uint(8)); }
  std::string text() {
    const uint32_t n = u32();
    if (short_ || bytes_.size() - pos_ < n) {
      short_ = true;
      return {};
    }
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool cut_short() const { return short_; }
  size_t left() const { return bytes_.size() - pos_; }

private:
  const std::string& bytes_;
  size_t pos_ = 0;
  bool short_ = false;
};

uint32_t crc_of(const std::string& bytes, size_t n) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n)));
}

// The fields after the magic and version, up to the checksum.
result<index> decode_body(reader& in, const std::string& path) {
  index idx;
  const uint32_t encoding = in.u32();
  idx.encoding = encoding == 0 ? "raw" : encoding == 1 ? "deflate" : "";
  idx.source_name = in.text();
  idx.size = in.i64();
  idx.feature_count = in.i64();
  idx.target_count = in.i64();
  idx.class_count = in.i64();
  const uint32_t rank = in.u32();
  if (rank > 16)
    return corrupt_data(path + ": sample shape of rank " + std::to_string(rank));
  for (uint32_t d = 0; d < rank && !in.cut_short(); ++d)
    idx.sample_shape.push_back(in.i64());
  const uint32_t count = in.u32();
  if (count > max_count)
    return corrupt_data(path + ": " + std::to_string(count) + " shards is not believable");
  for (uint32_t s = 0; s < count && !in.cut_short(); ++s) {
    shard_entry e;
    e.file = in.text();
    e.records = in.i64();
    e.bytes = in.i64();
    e.crc32 = in.u32();
    idx.shards.push_back(std::move(e));
  }
  if (in.cut_short())
    return corrupt_data(path + ": the index is cut short");
  if (idx.encoding.empty())
    return corrupt_data(path + ": unknown record encoding " + std::to_string(encoding));
  return idx;
}

status check_counts(const index& idx, const std::string& path) {
  if (idx.size < 0 || idx.feature_count <= 0 || idx.target_count < 0 || idx.class_count < 0)
    return corrupt_data(path + ": negative or zero counts (size " + std::to_string(idx.size) +
                        ", features " + std::to_string(idx.feature_count) + ", targets " +
                        std::to_string(idx.target_count) + ")");
  int64_t product = 1;
  for (int64_t d : idx.sample_shape)
    product = product > 0 && d > 0 && product <= (int64_t{1} << 40) / d ? product * d : -1;
  if (product != idx.feature_count)
    return corrupt_data(path + ": the sample shape does not multiply to " +
                        std::to_string(idx.feature_count) + " features");
  if (idx.target_count > (int64_t{1} << 40))
    return corrupt_data(path + ": " + std::to_string(idx.target_count) +
                        " targets per record is not believable");
  int64_t records = 0;
  for (const shard_entry& e : idx.shards) {
    if (e.records <= 0 || e.bytes <= 0 || e.file.empty() ||
        e.file.find('/') != std::string::npos || e.file[0] == '.')
      return corrupt_data(path + ": bad entry for shard '" + e.file + "'");
    if (e.records > idx.size - records)  // (checked before adding: no overflow)
      return corrupt_data(path + ": the shards hold more than the index's " +
                          std::to_string(idx.size) + " records");
    records += e.records;
  }
  if (records != idx.size)
    return corrupt_data(path + ": the shards hold " + std::to_string(records) +
                        " records, the index says " + std::to_string(idx.size));
  return status::ok();
}

} // namespace

std::string shard_file_name(size_t shard) {
  char name[32];
  std::snprintf(name, sizeof name, "shard-%05zu.bin", shard);
  return name;
}

std::string encode(const index& idx) {
  std::string out(magic, sizeof magic);
  put_u32(out, version);
  put_u32(out, idx.encoding == "deflate" ? 1 : 0);
  put_string(out, idx.source_name);
  put_i64(out, idx.size);
  put_i64(out, idx.feature_count);
  put_i64(out, idx.target_count);
  put_i64(out, idx.class_count);
  put_u32(out, static_cast<uint32_t>(idx.sample_shape.size()));
  for (int64_t d : idx.sample_shape)
    put_i64(out, d);
  put_u32(out, static_cast<uint32_t>(idx.shards.size()));
  for (const shard_entry& e : idx.shards) {
    put_string(out, e.file);
    put_i64(out, e.records);
    put_i64(out, e.bytes);
    put_u32(out, e.crc32);
  }
  put_u32(out, crc_of(out, out.size()));
  return out;
}

result<index> decode(const std::string& bytes, const std::string& path) {
  if (bytes.size() < sizeof magic + 8 || std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    return corrupt_data(path + ": not a dtrain shard index (bad magic)");
  const std::string body = bytes.substr(0, bytes.size() - 4);
  const std::string crc_bytes = bytes.substr(bytes.size() - 4);
  reader crc_field(crc_bytes);
  if (crc_of(body, body.size()) != crc_field.u32())
    return corrupt_data(path + ": the index's checksum does not match (damaged index)");
  reader in(body);
  in.uint(sizeof magic);
  const uint32_t v = in.u32();
  if (v != version)
    return corrupt_data(path + ": index version " + std::to_string(v) + ", this dtrain reads " +
                        std::to_string(version));
  result<index> idx = decode_body(in, path);
  if (!idx)
    return idx.error();
  if (in.left() != 0)
    return corrupt_data(path + ": " + std::to_string(in.left()) + " unexpected bytes at the end");
  if (status s = check_counts(*idx, path); !s)
    return s;
  return idx;
}

} // namespace dtrain::data::shard_format
