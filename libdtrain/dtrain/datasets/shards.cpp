// open_shards and shard_dataset: record shards read back through mmap, each
// shard's checksum verified once, on first touch.
#include "dtrain/datasets/shards.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "dtrain/core/files.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/mapped_file.hpp"
#include "dtrain/datasets/shard_index.hpp"

namespace dtrain::data {

/// One shard's read-only mapping and the outcome of its one-time check.
struct shard_dataset::mapping {
  mapped_file file;
  const unsigned char* data = nullptr;  // file.data
  size_t size = 0;                      // file.size
  std::once_flag checked;
  status outcome;  // written once inside call_once, read after it
};

namespace {

// Files larger than this are not an index: refuse before reading them.
constexpr off_t max_index_bytes = 256 << 20;

result<std::string> read_index_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return os_error("cannot open shard index", path, errno);
  struct stat st {};
  std::string bytes;
  int err = ::fstat(fd, &st) == 0 ? 0 : errno;
  if (err == 0 && st.st_size > max_index_bytes)
    err = EFBIG;
  if (err == 0)
    bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (err == 0 && done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      err = got < 0 ? errno : EIO;
    else
      done += static_cast<size_t>(got);
  }
  ::close(fd);
  if (err != 0)
    return os_error("cannot read shard index", path, err);
  return bytes;
}

uint64_t load_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

uint32_t crc_of(const unsigned char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t step = size_t{1} << 30;  // crc32 takes 32-bit lengths
  for (size_t done = 0; done < n; done += step)
    crc = crc32(crc, data + done, static_cast<uInt>(std::min(step, n - done)));
  return static_cast<uint32_t>(crc);
}

// Checks a deflate shard's offset table: it fits, starts at 0, rises
// strictly and ends where the table begins.
status check_offset_table(const unsigned char* data, size_t size, int64_t records,
                          const std::string& path) {
  // (compared before multiplying: 8 * (records + 1) may wrap around)
  if (static_cast<uint64_t>(records) + 1 > size / 8)
    return corrupt_data(path + ": too small for its offset table of " +
                        std::to_string(static_cast<uint64_t>(records) + 1) + " entries");
  const uint64_t table = 8 * (static_cast<uint64_t>(records) + 1);
  const unsigned char* at = data + size - table;
  uint64_t previous = load_u64(at);
  if (previous != 0)
    return corrupt_data(path + ": offset table does not start at 0");
  for (int64_t r = 1; r <= records; ++r) {
    const uint64_t next = load_u64(at + 8 * r);
    if (next <= previous || next > size - table)
      return corrupt_data(path + ": offset table entry " + std::to_string(r) + " is out of order");
    previous = next;
  }
  if (previous != size - table)
    return corrupt_data(path + ": offset table does not end where the table starts");
  return status::ok();
}

// Maps the shard `entry` names, checking its size against the index's.
result<mapped_file> map_shard(const shard_format::shard_entry& entry, const std::string& path) {
  auto file = mapped_file::open(path);
  if (!file)
    return status(file.error().code(), "shard: " + file.error().message());
  if (static_cast<int64_t>(file->size) != entry.bytes)
    return corrupt_data(path + ": shard is " + std::to_string(file->size) +
                        " bytes, the index says " + std::to_string(entry.bytes) +
                        (static_cast<int64_t>(file->size) < entry.bytes ? " (truncated)" : ""));
  return file;
}

} // namespace

shard_dataset::~shard_dataset() = default;

std::string shard_dataset::name() const {
  return dir_ + " (" + std::to_string(size_) + " records in " + std::to_string(shards_.size()) +
         " shards)";
}

status shard_dataset::verify(size_t shard) const {
  mapping& m = *maps_[shard];
  std::call_once(m.checked, [&] {
    const shard_file& f = shards_[shard];
    const uint32_t crc = crc_of(m.data, m.size);
    if (crc != f.crc32)
      m.outcome = corrupt_data(f.path + ": shard checksum mismatch (crc32 " + std::to_string(crc) +
                               ", the index says " + std::to_string(f.crc32) + ")");
    else if (encoding_ == "deflate")
      m.outcome = check_offset_table(m.data, m.size, f.records, f.path);
  });
  return m.outcome;
}

status shard_dataset::verify_all() const {
  for (size_t s = 0; s < shards_.size(); ++s) {
    if (status v = verify(s); !v)
      return v;
  }
  return status::ok();
}

status shard_dataset::read_record(size_t shard, int64_t local, float* features,
                                  float* targets) const {
  const size_t x_bytes = static_cast<size_t>(feature_count_) * sizeof(float);
  const size_t y_bytes = static_cast<size_t>(target_count_) * sizeof(float);
  const mapping& m = *maps_[shard];
  if (encoding_ == "raw") {
    const unsigned char* at = m.data + static_cast<size_t>(local) * (x_bytes + y_bytes);
    std::memcpy(features, at, x_bytes);
    std::memcpy(targets, at + x_bytes, y_bytes);
    return status::ok();
  }
  const shard_file& f = shards_[shard];
  const unsigned char* table = m.data + m.size - 8 * (static_cast<size_t>(f.records) + 1);
  const uint64_t begin = load_u64(table + 8 * local), end = load_u64(table + 8 * (local + 1));
  // One buffer per loader thread, reused across records.
  thread_local std::vector<unsigned char> record;
  record.resize(x_bytes + y_bytes);
  uLongf got = static_cast<uLongf>(record.size());
  const int rc = uncompress(record.data(), &got, m.data + begin, static_cast<uLong>(end - begin));
  if (rc != Z_OK || got != record.size())
    return corrupt_data(f.path + ": record " + std::to_string(local) +
                        " does not inflate to " + std::to_string(record.size()) + " bytes (zlib " +
                        std::to_string(rc) + ")");
  std::memcpy(features, record.data(), x_bytes);
  std::memcpy(targets, record.data() + x_bytes, y_bytes);
  return status::ok();
}

status shard_dataset::gather(const int64_t* indices, int64_t n, float* features,
                             float* targets) const {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = indices[i];
    if (row < 0 || row >= size_)
      return status(error_code::out_of_range, name() + ": sample " + std::to_string(row) +
                                                   " is not in [0, " + std::to_string(size_) + ")");
    const auto shard = static_cast<size_t>(
        std::upper_bound(starts_.begin(), starts_.end(), row) - starts_.begin() - 1);
    if (status s = verify(shard); !s)
      return s;
    if (status s = read_record(shard, row - starts_[shard], features + i * feature_count_,
                               targets + i * target_count_);
        !s)
      return s;
  }
  return status::ok();
}

bool is_shard_directory(const std::string& dir) {
  struct stat st {};
  const std::string index = dir + "/" + shard_format::index_name;
  return ::stat(index.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

result<std::shared_ptr<const dataset>> open_shards(const std::string& dir) {
  const std::string index_path = dir + "/" + shard_format::index_name;
  result<std::string> bytes = read_index_file(index_path);
  if (!bytes)
    return bytes.error();
  result<shard_format::index> idx = shard_format::decode(*bytes, index_path);
  if (!idx)
    return idx.error();
  std::shared_ptr<shard_dataset> set(new shard_dataset());
  set->dir_ = dir;
  set->encoding_ = idx->encoding;
  set->source_name_ = idx->source_name;
  set->size_ = idx->size;
  set->feature_count_ = idx->feature_count;
  set->target_count_ = idx->target_count;
  set->class_count_ = idx->class_count;
  set->sample_shape_ = idx->sample_shape;
  const int64_t record_bytes = (idx->feature_count + idx->target_count) * 4;
  int64_t start = 0;
  for (const shard_format::shard_entry& e : idx->shards) {
    const std::string path = dir + "/" + e.file;
    // (bytes / record_bytes: records * record_bytes may overflow)
    if (idx->encoding == "raw" &&
        (e.bytes % record_bytes != 0 || e.bytes / record_bytes != e.records))
      return corrupt_data(index_path + ": shard " + e.file + " of " + std::to_string(e.records) +
                          " raw records cannot be " + std::to_string(e.bytes) + " bytes");
    auto m = std::make_unique<shard_dataset::mapping>();
    DTRAIN_ASSIGN_OR_RETURN(m->file, map_shard(e, path));
    m->data = m->file.data;
    m->size = m->file.size;
    set->maps_.push_back(std::move(m));
    set->shards_.push_back({path, e.records, e.bytes, e.crc32});
    set->starts_.push_back(start);
    start += e.records;
  }
  return std::shared_ptr<const dataset>(std::move(set));
}

} // namespace dtrain::data
