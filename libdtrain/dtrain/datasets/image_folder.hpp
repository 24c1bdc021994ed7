#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// Where read_image_folder finds its images and what shape it gives them.
struct image_folder_options {
  std::string path;                // root: one subfolder per class
  int64_t height = 0, width = 0;   // 0, 0: every image must have the first image's size
  std::string fit = "resize";      // "resize": bilinear to height x width (aspect not kept);
                                   // "center_crop": scale so the image covers height x width
                                   // (the short side fits), then take the centre
  int64_t channels = 0;            // 1 (grey) or 3 (RGB); 0: the first image's
  std::vector<std::string> classes;  // optional fixed class list, in class-index order
};

/// A classification data set of image files, one folder per class,
/// decoded lazily: opening lists the files and reads the first image's
/// header only; gather() reads and decodes each requested file in the
/// calling thread (a loader worker), so memory stays at one batch however
/// many images there are.
///
/// Layout: `path/<class>/<image>`. Classes are the subfolders of `path` in
/// sorted (byte-wise) name order, names starting with '.' skipped, unless
/// options.classes names them (then in that order, and each must exist).
/// A class folder's images are its regular files (symlinks followed) ending
/// in .png, .jpg or .jpeg, any case, in sorted name order; other files and
/// nested folders are skipped silently. Samples are numbered class by class
/// in that order. The format is told by the file's bytes, not its name.
///
/// Features: `channels x height x width` floats in [0, 1] (byte / 255), CHW.
/// Grey images given 3 channels repeat the grey value; RGB images given 1
/// channel become 0.299 R + 0.587 G + 0.114 B (ITU-R 601 luma). Resampling
/// is bilinear with pixel centres at half-integers and no anti-aliasing
/// filter (an image of the target size is copied exactly). Target: the
/// class index, as one float; class_count() = the number of classes.
///
/// Thread-safe: immutable after opening; gather may run in many threads.
/// Failures of gather (a file removed since opening, a truncated or corrupt
/// image, an image of another size when no size was set) are statuses
/// naming the record (0-based index) and the file; nothing aborts.
class image_folder_dataset final : public dataset {
public:
  struct sample {
    std::string path;
    int64_t class_index = 0;
  };

  image_folder_dataset(image_folder_options options, std::vector<std::string> class_names,
                       std::vector<sample> samples, int64_t channels, int64_t height,
                       int64_t width);

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  int64_t feature_count() const override { return channels_ * height_ * width_; }
  int64_t target_count() const override { return 1; }
  std::string name() const override;
  std::vector<int64_t> sample_shape() const override { return {channels_, height_, width_}; }
  int64_t class_count() const override { return static_cast<int64_t>(class_names_.size()); }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override;

  /// The class folder names, in class-index order.
  const std::vector<std::string>& class_names() const { return class_names_; }
  /// Every sample's file and class, in record order.
  const std::vector<sample>& samples() const { return samples_; }

private:
  status load(int64_t record, float* features) const;

  image_folder_options options_;
  std::vector<std::string> class_names_;
  std::vector<sample> samples_;
  int64_t channels_;
  int64_t height_;
  int64_t width_;
  bool fixed_size_;  // height and width were given: every image is resampled to them
};

/// Opens an image folder as image_folder_dataset describes. Errors, each
/// naming the path at fault:
///  - invalid_argument: a bad option (fit not resize/center_crop, channels
///    not 0/1/3, only one of height/width set, a negative size);
///  - not_found: `path`, or a class folder options.classes names, missing;
///  - invalid_argument: `path` is not a folder, holds no class folders, or a
///    class folder holds no .png/.jpg/.jpeg file;
///  - read_image_header's errors for the first image (a file that cannot be
///    read is io_error).
result<std::shared_ptr<const dataset>> read_image_folder(const image_folder_options& options);

} // namespace dtrain::data
