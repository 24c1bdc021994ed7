// read_hdf5: an HDF5 file's features read lazily by hyperslab, its targets
// held in memory; every libhdf5 call under one process-wide mutex.
#include "dtrain/datasets/hdf5.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <mutex>
#include <utility>
#include <vector>

#include "dtrain/core/files.hpp"

namespace dtrain::data {

namespace {

// Debian's libhdf5 is the serial build without --enable-threadsafe.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

// Holds the HDF5 mutex and keeps libhdf5 from printing its error stack on
// stderr (restored afterwards); failures are reported through statuses.
class hdf5_lock {
public:
  hdf5_lock() : lock_(hdf5_mutex()) {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~hdf5_lock() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  hdf5_lock(const hdf5_lock&) = delete;
  hdf5_lock& operator=(const hdf5_lock&) = delete;

private:
  std::lock_guard<std::mutex> lock_;
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An HDF5 identifier closed by `Close` (H5Fclose, H5Dclose, ...). Must be
// destroyed while the HDF5 mutex is held.
template <herr_t (*Close)(hid_t)>
class handle {
public:
  handle() = default;
  explicit handle(hid_t id) : id_(id) {}
  handle(handle&& other) noexcept : id_(std::exchange(other.id_, -1)) {}
  handle& operator=(handle&& other) noexcept {
    reset();
    id_ = std::exchange(other.id_, -1);
    return *this;
  }
  ~handle() { reset(); }
  void reset() {
    if (id_ >= 0)
      Close(id_);
    id_ = -1;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

private:
  hid_t id_ = -1;
};
using file_handle = handle<H5Fclose>;
using dataset_handle = handle<H5Dclose>;
using space_handle = handle<H5Sclose>;
using type_handle = handle<H5Tclose>;

// The innermost description on HDF5's error stack, for a message; "" if none.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e->desc != nullptr)
          *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason.empty() ? "" : " (" + reason + ")";
}

// The datasets a file holds, by full path ("x", "train/y"), for messages.
std::string dataset_list(hid_t file) {
  std::vector<std::string> names;
  H5Lvisit(
      file, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t group, const char* name, const H5L_info_t*, void* out) -> herr_t {
        const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
        if (object >= 0) {
          if (H5Iget_type(object) == H5I_DATASET)
            static_cast<std::vector<std::string>*>(out)->push_back(name);
          H5Oclose(object);
        }
        return 0;
      },
      &names);
  H5Eclear2(H5E_DEFAULT);
  if (names.empty())
    return "the file has no datasets";
  std::string list = "the file has";
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? " '" : ", '") + names[i] + "'";
  return list;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
  case H5T_STRING: return "string";
  case H5T_COMPOUND: return "compound";
  case H5T_ENUM: return "enum";
  case H5T_ARRAY: return "array";
  case H5T_VLEN: return "variable-length";
  case H5T_OPAQUE: return "opaque";
  case H5T_REFERENCE: return "reference";
  case H5T_BITFIELD: return "bitfield";
  case H5T_TIME: return "time";
  default: return "unknown";
  }
}

// One dataset of the file, opened and checked to be numeric, with its dims.
struct opened_array {
  dataset_handle id;
  std::vector<hsize_t> dims;
};

result<opened_array> open_array(hid_t file, const std::string& path, const std::string& name) {
  const std::string what = path + ": dataset '" + name + "'";
  // H5Lexists fails (rather than saying no) when a group on the way is
  // missing; either way the dataset is not there.
  const htri_t exists = H5Lexists(file, name.c_str(), H5P_DEFAULT);
  opened_array a;
  if (exists > 0)
    a.id = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!a.id.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return not_found(what + " does not exist; " + dataset_list(file));
  }
  const type_handle type(H5Dget_type(a.id.get()));
  const H5T_class_t type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT)
    return invalid_argument(what + " holds " + class_name(type_class) +
                            " values, not numbers (integer or float)");
  const space_handle space(H5Dget_space(a.id.get()));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0)
    return io_error(what + ": cannot read its shape" + hdf5_reason());
  a.dims.resize(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), a.dims.data(), nullptr);
  return a;
}

std::string dims_string(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
  return s + "]";
}

// Reads a whole [N] or [N, T] dataset as floats (HDF5 converts the type).
result<std::vector<float>> read_all(const opened_array& a, const std::string& what) {
  size_t count = 1;
  for (hsize_t d : a.dims)
    count *= static_cast<size_t>(d);
  std::vector<float> values(count);
  if (count > 0 && H5Dread(a.id.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                           values.data()) < 0)
    return io_error(what + ": cannot read it" + hdf5_reason());
  return values;
}

// Class indices must be whole numbers >= 0; returns the class count.
result<int64_t> count_classes(const std::vector<float>& labels, const std::string& what) {
  float largest = -1;
  for (size_t i = 0; i < labels.size(); ++i) {
    const float v = labels[i];
    if (!(v >= 0) || v != std::floor(v) || v > 16777216.0f)
      return invalid_argument(what + ": sample " + std::to_string(i) + " has class " +
                              std::to_string(v) +
                              ", not a whole number >= 0 (set classification: false for "
                              "regression targets)");
    largest = std::max(largest, v);
  }
  return static_cast<int64_t>(largest) + 1;
}

/// The dataset read_hdf5 returns: the open file and features dataset (used
/// under the HDF5 mutex only) and the targets in memory.
class hdf5_dataset final : public dataset {
public:
  hdf5_dataset(std::string path, std::string features_name, file_handle file,
               opened_array features, std::vector<float> targets, int64_t target_count,
               int64_t class_count)
    : path_(std::move(path)), features_name_(std::move(features_name)),
      file_(std::move(file)), features_(std::move(features.id)),
      dims_(std::move(features.dims)), targets_(std::move(targets)),
      target_count_(target_count), class_count_(class_count) {
    feature_count_ = 1;
    for (size_t axis = 1; axis < dims_.size(); ++axis)
      feature_count_ *= static_cast<int64_t>(dims_[axis]);
  }
  ~hdf5_dataset() override {
    hdf5_lock lock;
    features_.reset();
    file_.reset();
  }

  int64_t size() const override { return static_cast<int64_t>(dims_[0]); }
  int64_t feature_count() const override { return feature_count_; }
  int64_t target_count() const override { return target_count_; }
  std::string name() const override { return path_ + ":" + features_name_; }
  std::vector<int64_t> sample_shape() const override {
    if (dims_.size() == 1)
      return {1};
    return std::vector<int64_t>(dims_.begin() + 1, dims_.end());
  }
  int64_t class_count() const override { return class_count_; }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override;

private:
  status read_rows(const std::vector<int64_t>& rows, float* out) const;

  std::string path_, features_name_;
  file_handle file_;
  dataset_handle features_;
  std::vector<hsize_t> dims_;
  std::vector<float> targets_;
  int64_t feature_count_ = 1, target_count_, class_count_;
};

// Reads the sorted, distinct `rows` into out [rows.size(), F]: one
// selection made of one block per run of consecutive rows, one H5Dread.
status hdf5_dataset::read_rows(const std::vector<int64_t>& rows, float* out) const {
  hdf5_lock lock;
  const space_handle file_space(H5Dget_space(features_.get()));
  std::vector<hsize_t> start(dims_.size(), 0), count(dims_);
  H5S_seloper_t op = H5S_SELECT_SET;
  bool ok = file_space.valid();
  for (size_t i = 0; ok && i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1)
      ++j;
    start[0] = static_cast<hsize_t>(rows[i]);
    count[0] = static_cast<hsize_t>(j - i);
    ok = H5Sselect_hyperslab(file_space.get(), op, start.data(), nullptr, count.data(),
                             nullptr) >= 0;
    op = H5S_SELECT_OR;
    i = j;
  }
  const hsize_t total = rows.size() * static_cast<hsize_t>(feature_count_);
  const space_handle memory_space(H5Screate_simple(1, &total, nullptr));
  if (ok)
    ok = H5Dread(features_.get(), H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(),
                 H5P_DEFAULT, out) >= 0;
  if (!ok)
    return io_error(path_ + ": dataset '" + features_name_ + "': cannot read " +
                    std::to_string(rows.size()) + " rows from record " +
                    std::to_string(rows[0]) + hdf5_reason());
  return status::ok();
}

status hdf5_dataset::gather(const int64_t* indices, int64_t n, float* features,
                            float* targets) const {
  if (n <= 0)
    return status::ok();
  std::vector<int64_t> rows(indices, indices + n);
  for (int64_t row : rows) {
    if (row < 0 || row >= size())
      return status(error_code::out_of_range, name() + ": sample " + std::to_string(row) +
                                                   " is not in [0, " + std::to_string(size()) + ")");
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::vector<float> block(rows.size() * static_cast<size_t>(feature_count_));
  if (status s = read_rows(rows, block.data()); !s)
    return s;
  const size_t f = static_cast<size_t>(feature_count_), t = static_cast<size_t>(target_count_);
  for (int64_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(
        std::lower_bound(rows.begin(), rows.end(), indices[i]) - rows.begin());
    std::copy_n(block.data() + at * f, f, features + i * feature_count_);
    std::copy_n(targets_.data() + static_cast<size_t>(indices[i]) * t, t,
                targets + i * target_count_);
  }
  return status::ok();
}

// The targets named by `options` checked against the features' N: their
// values, their count per sample, their class count.
struct target_values {
  std::vector<float> values;
  int64_t per_sample = 0, classes = 0;
};

result<target_values> read_targets(hid_t file, const hdf5_options& options, hsize_t samples) {
  target_values t;
  if (options.targets.empty())
    return t;
  const std::string what = options.path + ": dataset '" + options.targets + "'";
  result<opened_array> y = open_array(file, options.path, options.targets);
  if (!y)
    return y.error();
  if (y->dims.size() != 1 && y->dims.size() != 2)
    return invalid_argument(what + " has shape " + dims_string(y->dims) +
                            ", targets must be [N] or [N, T]");
  if (y->dims[0] != samples)
    return shape_mismatch(what + " has " + std::to_string(y->dims[0]) + " samples, dataset '" +
                          options.features + "' has " + std::to_string(samples));
  t.per_sample = y->dims.size() == 2 ? static_cast<int64_t>(y->dims[1]) : 1;
  if (options.classification && t.per_sample != 1)
    return invalid_argument(what + " has shape " + dims_string(y->dims) +
                            ": class targets must be one per sample");
  result<std::vector<float>> values = read_all(*y, what);
  if (!values)
    return values.error();
  t.values = std::move(*values);
  if (options.classification) {
    result<int64_t> k = count_classes(t.values, what);
    if (!k)
      return k.error();
    t.classes = *k;
  }
  return t;
}

} // namespace

result<std::shared_ptr<const dataset>> read_hdf5(const hdf5_options& options) {
  struct stat st {};
  if (::stat(options.path.c_str(), &st) != 0)
    return os_error("read_hdf5: cannot open", options.path, errno);
  if (options.features.empty())
    return invalid_argument(options.path + ": the features dataset name is empty");
  hdf5_lock lock;
  if (H5Fis_hdf5(options.path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return corrupt_data(options.path + ": not an HDF5 file (looking for dataset '" +
                        options.features + "')");
  }
  file_handle file(H5Fopen(options.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid())
    return io_error(options.path + ": cannot open the HDF5 file" + hdf5_reason());
  result<opened_array> x = open_array(file.get(), options.path, options.features);
  if (!x)
    return x.error();
  if (x->dims.empty())
    return invalid_argument(options.path + ": dataset '" + options.features +
                            "' is a scalar; features must be [N, ...]");
  for (size_t axis = 1; axis < x->dims.size(); ++axis) {
    if (x->dims[axis] == 0)
      return invalid_argument(options.path + ": dataset '" + options.features + "' has shape " +
                              dims_string(x->dims) + ": no features per sample");
  }
  result<target_values> y = read_targets(file.get(), options, x->dims[0]);
  if (!y)
    return y.error();
  return std::shared_ptr<const dataset>(std::make_shared<hdf5_dataset>(
      options.path, options.features, std::move(file), std::move(*x), std::move(y->values),
      y->per_sample, y->classes));
}

} // namespace dtrain::data
