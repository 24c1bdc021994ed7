#include "dtrain/data/idx.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain::data {

namespace {

constexpr uint8_t unsigned_byte_type = 0x08;
// A header that promises more than this is corrupt, not a data set to read:
// it would only make us allocate before finding out.
constexpr int64_t max_values = int64_t{1} << 40;
// Reads are capped so that they fit gzread's unsigned length with room.
constexpr int64_t max_read = int64_t{1} << 30;
// The first allocation; larger promises grow geometrically as data arrives,
// so a lying header costs no more memory than the stream really holds.
constexpr int64_t first_allocation = int64_t{64} << 20;

const char* type_name(uint8_t code) {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "short";
    case 0x0C: return "int";
    case 0x0D: return "float";
    case 0x0E: return "double";
    default: return "unknown";
  }
}

std::string hex_byte(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", value & 0xffu);
  return text;
}

/// An open zlib stream (plain or gzip'd, zlib decides from the content),
/// closed on destruction; every error it reports names the file.
class gz_reader {
public:
  explicit gz_reader(std::string path) : path_(std::move(path)) {}
  ~gz_reader() {
    if (file_ != nullptr)
      gzclose(file_);
  }
  gz_reader(const gz_reader&) = delete;
  gz_reader& operator=(const gz_reader&) = delete;

  status open();
  /// Reads up to `bytes`; fewer only at the end of the stream.
  result<int64_t> read(void* out, int64_t bytes);
  const std::string& path() const { return path_; }

private:
  status stream_error();

  std::string path_;
  gzFile file_ = nullptr;
};

status gz_reader::open() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string why = path_ + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? not_found(why) : io_error(why);
  }
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    ::close(fd);
    return io_error(path_ + ": is a directory, not an IDX file");
  }
  file_ = gzdopen(fd, "rb");
  if (file_ == nullptr) {
    ::close(fd);
    return io_error(path_ + ": cannot open a zlib stream on it");
  }
  // A large internal buffer: fewer read() calls on the 26 MB training file.
  gzbuffer(file_, 1u << 20);
  return status::ok();
}

status gz_reader::stream_error() {
  int code = Z_OK;
  const char* text = gzerror(file_, &code);
  if (code == Z_ERRNO)
    return io_error(path_ + ": read failed: " + std::strerror(errno));
  std::string reason = text != nullptr ? text : "unknown error";
  // gzdopen names the stream "<fd:N>" and zlib puts that before its message.
  if (reason.compare(0, 4, "<fd:") == 0 && reason.find(": ") != std::string::npos)
    reason = reason.substr(reason.find(": ") + 2);
  return corrupt_data(path_ + ": not a valid gzip stream (zlib: " + reason + ")");
}

result<int64_t> gz_reader::read(void* out, int64_t bytes) {
  auto* cursor = static_cast<uint8_t*>(out);
  int64_t done = 0;
  while (done < bytes) {
    auto want = static_cast<unsigned>(std::min(bytes - done, max_read));
    int got = gzread(file_, cursor + done, want);
    if (got < 0)
      return stream_error();
    if (got == 0)
      break;
    done += got;
  }
  // zlib reports a gzip stream cut short (Z_BUF_ERROR) only through gzerror:
  // gzread itself just returns fewer bytes.
  int code = Z_OK;
  gzerror(file_, &code);
  if (code != Z_OK)
    return stream_error();
  return done;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) |
         uint32_t{p[3]};
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i > 0 ? "x" : "") + std::to_string(dims[i]);
  return out;
}

// The magic number and the dimensions; leaves the stream at the data.
result<std::vector<int64_t>> read_header(gz_reader& in) {
  const std::string& path = in.path();
  uint8_t magic[4];
  auto got = in.read(magic, 4);
  if (!got)
    return got.error();
  if (*got < 4)
    return corrupt_data(path + ": truncated: " + std::to_string(*got) +
                        " bytes, too short for an IDX header");
  if (magic[0] != 0 || magic[1] != 0)
    return corrupt_data(path + ": not an IDX file: magic number starts " +
                        hex_byte(magic[0]) + " " + hex_byte(magic[1]) +
                        ", expected 0x00 0x00");
  if (magic[2] != unsigned_byte_type)
    return corrupt_data(path + ": unsupported IDX type code " + hex_byte(magic[2]) + " (" +
                        type_name(magic[2]) + "); only 0x08 (unsigned byte) is supported");
  std::vector<uint8_t> raw(4u * magic[3]);
  got = in.read(raw.data(), static_cast<int64_t>(raw.size()));
  if (!got)
    return got.error();
  if (*got < static_cast<int64_t>(raw.size()))
    return corrupt_data(path + ": truncated header: " + std::to_string(magic[3]) +
                        " dimensions need " + std::to_string(raw.size()) + " bytes, got " +
                        std::to_string(*got));
  std::vector<int64_t> dims(magic[3]);
  for (size_t i = 0; i < dims.size(); ++i)
    dims[i] = big_endian_u32(raw.data() + 4 * i);
  return dims;
}

// Reads exactly `count` bytes, growing `values` as they arrive; then insists
// on the end of the stream (which also makes zlib check the gzip CRC).
status read_values(gz_reader& in, const std::vector<int64_t>& dims, int64_t count,
                   std::vector<uint8_t>& values) {
  int64_t have = 0;
  while (have < count) {
    int64_t target = std::min(count, std::max(first_allocation, 2 * have));
    values.resize(static_cast<size_t>(target));
    auto got = in.read(values.data() + have, target - have);
    if (!got)
      return got.error();
    have += *got;
    if (have < target)
      return corrupt_data(in.path() + ": truncated: the header (" + dims_string(dims) +
                          ") promises " + std::to_string(count) + " bytes of data, got " +
                          std::to_string(have));
  }
  uint8_t extra[1];
  auto got = in.read(extra, 1);
  if (!got)
    return got.error();
  if (*got != 0)
    return corrupt_data(in.path() + ": trailing data after the " + std::to_string(count) +
                        " bytes that the header (" + dims_string(dims) + ") promises");
  return status::ok();
}

} // namespace

result<idx_array> read_idx(const std::string& path) {
  gz_reader in(path);
  DTRAIN_RETURN_IF_ERROR(in.open());
  idx_array out;
  DTRAIN_ASSIGN_OR_RETURN(out.dims, read_header(in));
  int64_t count = 1;
  for (int64_t d : out.dims) {
    if (d != 0 && count > max_values / d)
      return corrupt_data(path + ": the header's dimensions (" + dims_string(out.dims) +
                          ") promise more than 2^40 values");
    count *= d;
  }
  DTRAIN_RETURN_IF_ERROR(read_values(in, out.dims, count, out.values));
  return out;
}

namespace {

// Debian installs the files gzip'd; an uncompressed copy next to them (as
// some mirrors unpack it) is accepted when the .gz is absent.
std::string fashion_file(const std::string& dir, split which, const char* kind) {
  std::string stem =
      dir + "/" + (which == split::train ? "train" : "t10k") + "-" + kind + "-ubyte";
  if (::access((stem + ".gz").c_str(), F_OK) != 0 && ::access(stem.c_str(), F_OK) == 0)
    return stem;
  return stem + ".gz";
}

status check_fashion_shapes(const std::string& images_path, const idx_array& images,
                            const std::string& labels_path, const idx_array& labels) {
  const auto& d = images.dims;
  if (d.size() != 3 || d[1] != 28 || d[2] != 28)
    return corrupt_data(images_path + ": expected Nx28x28 images, the header says " +
                        dims_string(d));
  if (labels.dims.size() != 1)
    return corrupt_data(labels_path + ": expected a 1-dimensional label file, the header says " +
                        dims_string(labels.dims));
  if (d[0] != labels.dims[0])
    return corrupt_data(images_path + " holds " + std::to_string(d[0]) + " images but " +
                        labels_path + " holds " + std::to_string(labels.dims[0]) + " labels");
  for (size_t i = 0; i < labels.values.size(); ++i) {
    if (labels.values[i] >= 10)
      return corrupt_data(labels_path + ": label " + std::to_string(labels.values[i]) +
                          " of sample " + std::to_string(i) + " is not a class in [0, 10)");
  }
  return status::ok();
}

// One pass from bytes to floats, a plain loop the compiler vectorizes.
// Divides (as torchvision's ToTensor does x / 255) rather than multiplying
// by 1/255, which is not a float and would differ in the last bit.
tensor bytes_to_floats(const std::vector<uint8_t>& bytes, const shape_t& shape,
                       float divisor) {
  tensor out = tensor::empty(shape);
  float* dst = out.data();
  const uint8_t* src = bytes.data();
  const size_t n = bytes.size();
  for (size_t i = 0; i < n; ++i)
    dst[i] = static_cast<float>(src[i]) / divisor;
  return out;
}

} // namespace

result<std::shared_ptr<tensor_dataset>> load_fashion_mnist(const std::string& dir,
                                                           split which) {
  const std::string images_path = fashion_file(dir, which, "images-idx3");
  const std::string labels_path = fashion_file(dir, which, "labels-idx1");
  DTRAIN_ASSIGN_OR_RETURN(idx_array images, read_idx(images_path));
  DTRAIN_ASSIGN_OR_RETURN(idx_array labels, read_idx(labels_path));
  DTRAIN_RETURN_IF_ERROR(check_fashion_shapes(images_path, images, labels_path, labels));
  const int64_t n = images.dims[0];
  tensor features = bytes_to_floats(images.values, {n, 28 * 28}, 255.0f);
  tensor targets = bytes_to_floats(labels.values, {n}, 1.0f);
  std::string name = std::string("fashion-mnist ") +
                     (which == split::train ? "train" : "test") + " (" +
                     std::to_string(n) + ")";
  return tensor_dataset::create(std::move(features), std::move(targets), std::move(name), 10);
}

std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("DTRAIN_FASHION_MNIST");
  return env != nullptr && *env != '\0' ? env : "/usr/share/datasets/fashion-mnist";
}

} // namespace dtrain::data
