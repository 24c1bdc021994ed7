// write_shards: a dataset into a directory of record shards (shards.hpp),
// through a temporary directory renamed at the end.
#include "dtrain/datasets/shards.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <numeric>
#include <system_error>
#include <utility>

#include "dtrain/core/files.hpp"
#include "dtrain/datasets/shard_index.hpp"

namespace dtrain::data {

namespace {

// How much of the source one gather reads, and how many bytes a shard
// buffers before writing them out: small enough to keep memory bounded.
constexpr int64_t chunk_bytes = 4 << 20;
constexpr size_t flush_bytes = 1 << 20;

// ".NAME.tmp-PID-N" next to `dir` (trailing slashes ignored).
std::string temp_dir_for(std::string dir) {
  static std::atomic<uint64_t> counter{0};
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  const size_t slash = dir.rfind('/');
  const std::string parent = slash == std::string::npos ? "" : dir.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? dir : dir.substr(slash + 1);
  return parent + "." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

// Removes a directory tree unless disarmed: a failed write leaves nothing.
class remove_on_failure {
public:
  explicit remove_on_failure(std::string dir) : dir_(std::move(dir)) {}
  ~remove_on_failure() {
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }
  void disarm() { dir_.clear(); }

private:
  std::string dir_;
};

// Writes the shards of one set into `dir` (which exists and is empty),
// filling `idx.shards`. One thread.
class set_writer {
public:
  set_writer(std::string dir, const shard_write_options& options,
             shard_format::index& idx)
    : dir_(std::move(dir)), limit_(options.shard_bytes),
      deflate_(options.encoding == "deflate"), idx_(idx) {}
  ~set_writer() { close_file(); }

  status add(const float* x, const float* y);
  status finish() { return fd_ < 0 ? status::ok() : finish_shard(); }

private:
  status start_shard();
  status finish_shard();
  status append(const void* data, size_t n);
  status flush();
  void close_file() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  std::string dir_, path_;
  int64_t limit_;
  bool deflate_;
  shard_format::index& idx_;
  int fd_ = -1;
  std::string buffer_;
  std::vector<unsigned char> record_, packed_;
  std::vector<uint64_t> offsets_;  // deflate: where each record starts
  int64_t records_ = 0, bytes_ = 0;
  uLong crc_ = 0;
};

status set_writer::add(const float* x, const float* y) {
  const size_t x_bytes = static_cast<size_t>(idx_.feature_count) * sizeof(float);
  const size_t y_bytes = static_cast<size_t>(idx_.target_count) * sizeof(float);
  record_.resize(x_bytes + y_bytes);
  std::copy_n(reinterpret_cast<const unsigned char*>(x), x_bytes, record_.data());
  std::copy_n(reinterpret_cast<const unsigned char*>(y), y_bytes, record_.data() + x_bytes);
  const std::vector<unsigned char>* payload = &record_;
  if (deflate_) {
    uLongf packed_size = compressBound(static_cast<uLong>(record_.size()));
    packed_.resize(packed_size);
    if (compress2(packed_.data(), &packed_size, record_.data(),
                  static_cast<uLong>(record_.size()), Z_DEFAULT_COMPRESSION) != Z_OK)
      return status(error_code::internal, path_ + ": zlib could not deflate a record");
    packed_.resize(packed_size);
    payload = &packed_;
  }
  // A deflate shard ends in a table of records + 1 offsets of 8 bytes.
  const int64_t table = deflate_ ? 8 * (records_ + 2) : 0;
  if (fd_ >= 0 && bytes_ + static_cast<int64_t>(payload->size()) + table > limit_) {
    if (status s = finish_shard(); !s)
      return s;
  }
  if (fd_ < 0) {
    if (status s = start_shard(); !s)
      return s;
  }
  offsets_.push_back(static_cast<uint64_t>(bytes_));
  ++records_;
  return append(payload->data(), payload->size());
}

status set_writer::start_shard() {
  path_ = dir_ + "/" + shard_format::shard_file_name(idx_.shards.size());
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0)
    return os_error("cannot create shard", path_, errno);
  records_ = bytes_ = 0;
  crc_ = crc32(0L, Z_NULL, 0);
  offsets_.clear();
  return status::ok();
}

status set_writer::append(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc_ = crc32(crc_, p, static_cast<uInt>(n));
  buffer_.append(reinterpret_cast<const char*>(p), n);
  bytes_ += static_cast<int64_t>(n);
  return buffer_.size() >= flush_bytes ? flush() : status::ok();
}

status set_writer::flush() {
  status s = write_all(fd_, buffer_.data(), buffer_.size(), path_);
  buffer_.clear();
  return s;
}

status set_writer::finish_shard() {
  if (deflate_) {
    offsets_.push_back(static_cast<uint64_t>(bytes_));
    for (uint64_t offset : offsets_) {
      unsigned char le[8];
      for (int i = 0; i < 8; ++i)
        le[i] = static_cast<unsigned char>(offset >> (8 * i));
      if (status s = append(le, sizeof le); !s)
        return s;
    }
  }
  if (status s = flush(); !s)
    return s;
  if (::fsync(fd_) != 0)
    return os_error("cannot fsync shard", path_, errno);
  close_file();
  const size_t slash = path_.rfind('/');
  idx_.shards.push_back({path_.substr(slash + 1), records_, bytes_, static_cast<uint32_t>(crc_)});
  return status::ok();
}

status check_options(const dataset& source, const shard_write_options& options) {
  if (options.dir.empty())
    return invalid_argument("write_shards: 'dir' is empty");
  if (options.shard_bytes <= 0)
    return invalid_argument("write_shards " + options.dir + ": 'shard_bytes' must be > 0, got " +
                            std::to_string(options.shard_bytes));
  if (options.encoding != "raw" && options.encoding != "deflate")
    return invalid_argument("write_shards " + options.dir + ": 'encoding' must be raw or deflate, got '" +
                            options.encoding + "'");
  if (source.feature_count() <= 0 || source.target_count() < 0 || source.size() < 0)
    return invalid_argument("write_shards " + options.dir + ": source " + source.name() +
                            " has no features");
  int64_t product = 1;
  for (int64_t d : source.sample_shape())
    product *= d;
  if (product != source.feature_count())
    return invalid_argument("write_shards " + options.dir + ": source " + source.name() +
                            " has a sample shape that does not multiply to its " +
                            std::to_string(source.feature_count()) + " features");
  struct stat st {};
  if (::stat(options.dir.c_str(), &st) == 0)
    return io_error("write_shards: " + options.dir + " already exists");
  return status::ok();
}

// Every record of `source`, in order, read a chunk at a time.
status copy_records(const dataset& source, set_writer& out, const std::string& dir) {
  const int64_t fc = source.feature_count(), tc = source.target_count();
  const int64_t record = (fc + tc) * static_cast<int64_t>(sizeof(float));
  const int64_t rows = std::max<int64_t>(1, chunk_bytes / record);
  std::vector<int64_t> indices(static_cast<size_t>(std::min(rows, source.size())));
  std::vector<float> x(indices.size() * static_cast<size_t>(fc));
  std::vector<float> y(indices.size() * static_cast<size_t>(tc));
  for (int64_t first = 0; first < source.size(); first += rows) {
    const int64_t n = std::min(rows, source.size() - first);
    std::iota(indices.begin(), indices.begin() + n, first);
    if (status s = source.gather(indices.data(), n, x.data(), y.data()); !s)
      return s.with_context("write_shards " + dir + ": reading " + source.name());
    for (int64_t r = 0; r < n; ++r) {
      if (status s = out.add(x.data() + r * fc, y.data() + r * tc); !s)
        return s;
    }
  }
  return out.finish();
}

} // namespace

status write_shards(const dataset& source, const shard_write_options& options) {
  if (status s = check_options(source, options); !s)
    return s;
  const std::string temp = temp_dir_for(options.dir);
  if (::mkdir(temp.c_str(), 0755) != 0)
    return os_error("write_shards: cannot create directory", temp, errno);
  remove_on_failure cleanup(temp);
  shard_format::index idx;
  idx.encoding = options.encoding;
  idx.source_name = source.name();
  idx.size = source.size();
  idx.feature_count = source.feature_count();
  idx.target_count = source.target_count();
  idx.class_count = source.class_count();
  idx.sample_shape = source.sample_shape();
  {
    set_writer writer(temp, options, idx);
    if (status s = copy_records(source, writer, options.dir); !s)
      return s;
  }
  const std::string bytes = shard_format::encode(idx);
  const std::string index_path = temp + "/" + shard_format::index_name;
  if (status s = write_file_atomically(index_path, bytes.data(), bytes.size(), durability::file); !s)
    return s;
  if (status s = sync_directory(temp); !s)
    return s;
  if (status s = rename_directory_durably(temp, options.dir); !s)
    return s;
  cleanup.disarm();
  return status::ok();
}

} // namespace dtrain::data
