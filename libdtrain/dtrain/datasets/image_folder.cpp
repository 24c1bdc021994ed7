#include "dtrain/datasets/image_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/datasets/image_decode.hpp"

namespace dtrain::data {

namespace {

namespace fs = std::filesystem;

status file_error(const std::string& path, const char* doing, int err) {
  std::string why = path + ": cannot " + doing + ": " + std::strerror(err);
  return err == ENOENT ? not_found(why) : io_error(why);
}

/// Closes a file descriptor on every path out.
class fd_guard {
public:
  explicit fd_guard(int fd) : fd_(fd) {}
  ~fd_guard() { ::close(fd_); }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;

private:
  int fd_;
};

/// A whole file's bytes, read with POSIX calls (no iostreams, no exceptions).
result<std::vector<unsigned char>> read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return file_error(path, "open", errno);
  fd_guard guard(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return file_error(path, "stat", errno);
  if (!S_ISREG(info.st_mode))
    return io_error(path + ": not a regular file");
  std::vector<unsigned char> bytes(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return file_error(path, "read", errno);
    if (got == 0)  // shrank since fstat: decode what is there
      break;
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

bool has_image_extension(const std::string& name) {
  auto dot = name.rfind('.');
  if (dot == std::string::npos)
    return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == "png" || ext == "jpg" || ext == "jpeg";
}

/// The names in `dir` for which `keep(entry)` holds, sorted.
template <class Keep>
result<std::vector<std::string>> list_sorted(const std::string& dir, Keep keep) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  std::vector<std::string> names;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (keep(*it, name))
      names.push_back(std::move(name));
  }
  if (ec)
    return file_error(dir, "list the folder", ec.value());
  std::sort(names.begin(), names.end());
  return names;
}

result<std::vector<std::string>> class_folders(const image_folder_options& options) {
  if (!options.classes.empty()) {
    for (const std::string& name : options.classes) {
      std::error_code ec;
      if (!fs::is_directory(options.path + "/" + name, ec))
        return not_found(options.path + "/" + name + ": class folder '" + name +
                         "' (named in classes) does not exist");
    }
    return options.classes;
  }
  DTRAIN_ASSIGN_OR_RETURN(
      std::vector<std::string> names,
      list_sorted(options.path, [](const fs::directory_entry& entry, const std::string& name) {
        std::error_code ec;
        return name[0] != '.' && entry.is_directory(ec);
      }));
  if (names.empty())
    return invalid_argument(options.path + ": holds no class folders (expected one subfolder "
                            "of images per class)");
  return names;
}

result<std::vector<std::string>> image_files(const std::string& folder) {
  DTRAIN_ASSIGN_OR_RETURN(
      std::vector<std::string> names,
      list_sorted(folder, [](const fs::directory_entry& entry, const std::string& name) {
        std::error_code ec;
        return has_image_extension(name) && entry.is_regular_file(ec);
      }));
  if (names.empty())
    return invalid_argument(folder + ": class folder holds no .png, .jpg or .jpeg file");
  return names;
}

status check_options(const image_folder_options& options) {
  if (options.path.empty())
    return invalid_argument("image folder: path is empty");
  if (options.fit != "resize" && options.fit != "center_crop")
    return invalid_argument(options.path + ": fit '" + options.fit +
                            "' is not one of resize, center_crop");
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    return invalid_argument(options.path + ": channels " + std::to_string(options.channels) +
                            " is not 0 (the first image's), 1 or 3");
  if (options.height < 0 || options.width < 0 || (options.height == 0) != (options.width == 0))
    return invalid_argument(options.path + ": height " + std::to_string(options.height) +
                            " and width " + std::to_string(options.width) +
                            " must both be positive, or both 0 (the first image's size)");
  std::error_code ec;
  auto kind = fs::status(options.path, ec).type();
  if (kind == fs::file_type::not_found)
    return not_found(options.path + ": image folder does not exist");
  if (kind != fs::file_type::directory)
    return invalid_argument(options.path + ": is not a folder");
  return status::ok();
}

/// The image as float planes [channels][h][w] in [0, 1] (byte / 255, the
/// correctly rounded quotient, as torchvision's to_tensor), converted to
/// `channels` (grey repeated, or RGB to ITU-R 601 luma).
std::vector<float> to_planes(const image& img, int64_t channels) {
  const int64_t pixels = img.height * img.width;
  std::vector<float> planes(static_cast<size_t>(channels * pixels));
  const uint8_t* in = img.pixels.data();
  for (int64_t p = 0; p < pixels; ++p) {
    const uint8_t* px = in + p * img.channels;
    if (channels == img.channels) {
      for (int64_t c = 0; c < channels; ++c)
        planes[static_cast<size_t>(c * pixels + p)] = px[c] / 255.0f;
    } else if (channels == 3) {  // grey to RGB
      for (int64_t c = 0; c < 3; ++c)
        planes[static_cast<size_t>(c * pixels + p)] = px[0] / 255.0f;
    } else {  // RGB to grey
      planes[static_cast<size_t>(p)] = (0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2]) / 255.0f;
    }
  }
  return planes;
}

/// One output axis's bilinear taps: for output i, source rows lo[i], hi[i]
/// and hi's weight. The window [start, start + extent) of a source axis of
/// `in` pixels is stretched over `out` pixels, centres at half-integers.
struct taps {
  std::vector<int64_t> lo, hi;
  std::vector<float> weight;
};

taps make_taps(int64_t in, int64_t out, double start, double extent) {
  taps t;
  t.lo.resize(static_cast<size_t>(out));
  t.hi.resize(static_cast<size_t>(out));
  t.weight.resize(static_cast<size_t>(out));
  const double step = extent / static_cast<double>(out);
  for (int64_t i = 0; i < out; ++i) {
    double s = start + (static_cast<double>(i) + 0.5) * step - 0.5;
    s = std::min(std::max(s, 0.0), static_cast<double>(in - 1));
    auto lo = static_cast<int64_t>(std::floor(s));
    t.lo[static_cast<size_t>(i)] = lo;
    t.hi[static_cast<size_t>(i)] = std::min(lo + 1, in - 1);
    t.weight[static_cast<size_t>(i)] = static_cast<float>(s - static_cast<double>(lo));
  }
  return t;
}

/// Samples planes [channels][h][w] into out [channels][height][width].
void resample(const std::vector<float>& planes, int64_t channels, int64_t h, int64_t w,
              int64_t height, int64_t width, bool center_crop, float* out) {
  double win_h = static_cast<double>(h), win_w = static_cast<double>(w);
  if (center_crop) {  // scale so that the image covers the target, keep the centre
    double scale = std::max(static_cast<double>(height) / h, static_cast<double>(width) / w);
    win_h = std::min(win_h, height / scale);
    win_w = std::min(win_w, width / scale);
  }
  const taps ys = make_taps(h, height, (h - win_h) / 2, win_h);
  const taps xs = make_taps(w, width, (w - win_w) / 2, win_w);
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = planes.data() + c * h * w;
    for (int64_t y = 0; y < height; ++y) {
      const float* top = plane + ys.lo[static_cast<size_t>(y)] * w;
      const float* bottom = plane + ys.hi[static_cast<size_t>(y)] * w;
      const float fy = ys.weight[static_cast<size_t>(y)];
      float* row = out + (c * height + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        auto lo = static_cast<size_t>(xs.lo[static_cast<size_t>(x)]);
        auto hi = static_cast<size_t>(xs.hi[static_cast<size_t>(x)]);
        const float fx = xs.weight[static_cast<size_t>(x)];
        float t = top[lo] + (top[hi] - top[lo]) * fx;
        float b = bottom[lo] + (bottom[hi] - bottom[lo]) * fx;
        row[x] = t + (b - t) * fy;
      }
    }
  }
}

} // namespace

image_folder_dataset::image_folder_dataset(image_folder_options options,
                                           std::vector<std::string> class_names,
                                           std::vector<sample> samples, int64_t channels,
                                           int64_t height, int64_t width)
  : options_(std::move(options)),
    class_names_(std::move(class_names)),
    samples_(std::move(samples)),
    channels_(channels),
    height_(height),
    width_(width),
    fixed_size_(options_.height > 0) {}

std::string image_folder_dataset::name() const {
  return "image folder " + options_.path + " (" + std::to_string(samples_.size()) +
         " images, " + std::to_string(class_names_.size()) + " classes)";
}

status image_folder_dataset::load(int64_t record, float* features) const {
  const sample& s = samples_[static_cast<size_t>(record)];
  DTRAIN_ASSIGN_OR_RETURN(std::vector<unsigned char> bytes, read_whole_file(s.path));
  DTRAIN_ASSIGN_OR_RETURN(image img, decode_image(bytes.data(), bytes.size(), s.path));
  if (!fixed_size_ && (img.height != height_ || img.width != width_))
    return shape_mismatch(s.path + ": image is " + std::to_string(img.width) + "x" +
                          std::to_string(img.height) + ", the data set's images are " +
                          std::to_string(width_) + "x" + std::to_string(height_) +
                          " (the first image's size; set height and width to resample)");
  std::vector<float> planes = to_planes(img, channels_);
  if (img.height == height_ && img.width == width_)
    std::copy(planes.begin(), planes.end(), features);  // either fit is the identity here
  else
    resample(planes, channels_, img.height, img.width, height_, width_,
             options_.fit == "center_crop", features);
  return status::ok();
}

status image_folder_dataset::gather(const int64_t* indices, int64_t n, float* features,
                                    float* targets) const {
  const int64_t width = feature_count();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t record = indices[i];
    if (record < 0 || record >= size())
      return status(error_code::out_of_range,
                    name() + ": record " + std::to_string(record) + " is outside [0, " +
                        std::to_string(size()) + ")");
    status loaded = load(record, features + i * width);
    if (!loaded.is_ok())
      return loaded.with_context("record " + std::to_string(record));
    targets[i] = static_cast<float>(samples_[static_cast<size_t>(record)].class_index);
  }
  return status::ok();
}

result<std::shared_ptr<const dataset>> read_image_folder(const image_folder_options& given) {
  image_folder_options options = given;
  while (options.path.size() > 1 && options.path.back() == '/')  // "root/" names "root/a/1.png"
    options.path.pop_back();
  DTRAIN_RETURN_IF_ERROR(check_options(options));
  DTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> classes, class_folders(options));
  std::vector<image_folder_dataset::sample> samples;
  for (size_t k = 0; k < classes.size(); ++k) {
    const std::string folder = options.path + "/" + classes[k];
    DTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, image_files(folder));
    for (std::string& file : files)
      samples.push_back({folder + "/" + file, static_cast<int64_t>(k)});
  }
  const std::string& first = samples.front().path;
  DTRAIN_ASSIGN_OR_RETURN(std::vector<unsigned char> bytes, read_whole_file(first));
  DTRAIN_ASSIGN_OR_RETURN(image_header header, read_image_header(bytes.data(), bytes.size(), first));
  const int64_t channels = options.channels != 0 ? options.channels : header.channels;
  const int64_t height = options.height != 0 ? options.height : header.height;
  const int64_t width = options.width != 0 ? options.width : header.width;
  return std::shared_ptr<const dataset>(std::make_shared<image_folder_dataset>(
      options, std::move(classes), std::move(samples), channels, height, width));
}

} // namespace dtrain::data
