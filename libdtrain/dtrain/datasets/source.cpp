#include "dtrain/datasets/source.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"
#include "dtrain/datasets/cached.hpp"
#include "dtrain/datasets/csv.hpp"
#include "dtrain/datasets/hdf5.hpp"
#include "dtrain/datasets/image_folder.hpp"
#include "dtrain/datasets/npy.hpp"
#include "dtrain/datasets/shards.hpp"
#include "dtrain/train/hyperparameters.hpp"

namespace dtrain::data {

namespace {

// Keys every format takes.
const std::vector<std::string> common_keys = {"format", "path", "shape", "scale", "cache",
                                              "cache_mb"};

// The keys each format takes beyond the common ones ('*' ends a prefix:
// categorical.* is any categorical.COLUMN).
const std::map<std::string, std::vector<std::string>>& format_keys() {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"csv", {"delimiter", "header", "targets", "target", "ignore", "categorical.*",
               "class_names", "missing"}},
      {"npy", {"targets", "features_key"}},
      {"images", {"height", "width", "fit", "channels", "classes"}},
      {"hdf5", {"features", "targets"}},
      {"shards", {}},
      {"idx", {"split"}},
  };
  return keys;
}

// tsv and npz read as csv and npy do.
std::string reader_of(const std::string& format) {
  if (format == "tsv")
    return "csv";
  if (format == "npz")
    return "npy";
  return format;
}

bool key_matches(const std::string& key, const std::string& pattern) {
  if (!pattern.empty() && pattern.back() == '*')
    return key.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0 &&
           key.size() > pattern.size() - 1;
  return key == pattern;
}

std::string known_formats() {
  return "csv, tsv, npy, npz, images, hdf5, shards, idx";
}

// The spec's values under their full names (what.KEY), so that the typed
// getters' errors name the key as the experiment file has it.
train::hyperparameters prefixed(const source_spec& spec, const std::string& what) {
  std::map<std::string, std::string> values;
  for (const auto& [key, value] : spec)
    values[what + "." + key] = value;
  return train::hyperparameters(std::move(values));
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "a,b" or "[a, b]" into its items; "" or "[]" is no item.
std::vector<std::string> string_list(const std::string& text) {
  std::string v = trim(text);
  if (v.size() >= 2 && v.front() == '[' && v.back() == ']')
    v = v.substr(1, v.size() - 2);
  std::vector<std::string> out;
  if (trim(v).empty())
    return out;
  size_t start = 0;
  for (;;) {
    size_t comma = v.find(',', start);
    out.push_back(trim(v.substr(start, comma == std::string::npos ? std::string::npos
                                                                    : comma - start)));
    if (comma == std::string::npos)
      return out;
    start = comma + 1;
  }
}

std::vector<std::string> list_of(const source_spec& spec, const std::string& key) {
  auto it = spec.find(key);
  return it == spec.end() ? std::vector<std::string>{} : string_list(it->second);
}

std::string value_of(const source_spec& spec, const std::string& key,
                     const std::string& fallback = "") {
  auto it = spec.find(key);
  return it == spec.end() ? fallback : it->second;
}

result<csv_options> csv_from(const source_spec& spec, const std::string& what,
                             bool classification) {
  const train::hyperparameters hp = prefixed(spec, what);
  csv_options o;
  o.path = value_of(spec, "path");
  const std::string delimiter = value_of(spec, "delimiter");
  if (delimiter == "\\t" || delimiter == "tab")
    o.delimiter = '\t';
  else if (delimiter.size() == 1)
    o.delimiter = delimiter[0];
  else if (!delimiter.empty())
    return invalid_argument(what + ".delimiter: '" + delimiter +
                            "' is not one character (or \\t)");
  if (value_of(spec, "format") == "tsv" && o.delimiter == 0)
    o.delimiter = '\t';
  DTRAIN_ASSIGN_OR_RETURN(o.header, hp.get_bool(what + ".header", true));
  o.targets = list_of(spec, "targets");
  if (spec.count("target")) {
    if (!o.targets.empty())
      return invalid_argument(what + ": give target or targets, not both");
    o.targets = list_of(spec, "target");
  }
  o.ignore = list_of(spec, "ignore");
  for (const auto& [key, value] : spec)
    if (key.rfind("categorical.", 0) == 0)
      o.categorical[key.substr(std::string("categorical.").size())] = string_list(value);
  o.class_names = list_of(spec, "class_names");
  o.missing = value_of(spec, "missing", "error");
  if (o.missing != "error" && o.missing != "mean" && o.missing != "zero")
    return invalid_argument(what + ".missing: '" + o.missing +
                            "' is not one of error, mean, zero");
  o.classification = classification;
  return o;
}

result<npy_options> npy_from(const source_spec& spec, bool classification) {
  npy_options o;
  o.features = value_of(spec, "path");
  o.targets = value_of(spec, "targets");
  o.features_key = value_of(spec, "features_key", o.features_key);
  o.classification = classification;
  return o;
}

result<image_folder_options> images_from(const source_spec& spec, const std::string& what) {
  const train::hyperparameters hp = prefixed(spec, what);
  image_folder_options o;
  o.path = value_of(spec, "path");
  DTRAIN_ASSIGN_OR_RETURN(o.height, hp.get_int(what + ".height", 0));
  DTRAIN_ASSIGN_OR_RETURN(o.width, hp.get_int(what + ".width", 0));
  DTRAIN_ASSIGN_OR_RETURN(o.channels, hp.get_int(what + ".channels", 0));
  o.fit = value_of(spec, "fit", o.fit);
  o.classes = list_of(spec, "classes");
  return o;
}

result<hdf5_options> hdf5_from(const source_spec& spec, bool classification) {
  hdf5_options o;
  o.path = value_of(spec, "path");
  o.features = value_of(spec, "features", o.features);
  o.targets = value_of(spec, "targets", o.targets);
  o.classification = classification;
  return o;
}

result<std::shared_ptr<const dataset>> open_idx(const source_spec& spec,
                                                const std::string& what) {
  const std::string which = value_of(spec, "split", "train");
  if (which != "train" && which != "test")
    return invalid_argument(what + ".split: '" + which + "' is not train or test");
  DTRAIN_ASSIGN_OR_RETURN(auto set, load_fashion_mnist(value_of(spec, "path"),
                                                       which == "train" ? split::train
                                                                        : split::test));
  return std::shared_ptr<const dataset>(std::move(set));
}

result<std::shared_ptr<const dataset>> open_reader(const source_spec& spec,
                                                   const std::string& what,
                                                   bool classification) {
  const std::string reader = reader_of(value_of(spec, "format"));
  if (reader == "csv") {
    DTRAIN_ASSIGN_OR_RETURN(auto o, csv_from(spec, what, classification));
    return read_csv(o);
  }
  if (reader == "npy") {
    DTRAIN_ASSIGN_OR_RETURN(auto o, npy_from(spec, classification));
    return read_npy(o);
  }
  if (reader == "images") {
    DTRAIN_ASSIGN_OR_RETURN(auto o, images_from(spec, what));
    return read_image_folder(o);
  }
  if (reader == "hdf5") {
    DTRAIN_ASSIGN_OR_RETURN(auto o, hdf5_from(spec, classification));
    return read_hdf5(o);
  }
  if (reader == "shards") {
    DTRAIN_ASSIGN_OR_RETURN(auto set, open_shards(value_of(spec, "path")));
    return std::shared_ptr<const dataset>(std::move(set));
  }
  return open_idx(spec, what);
}

/// Rows of `base`, seen with another sample shape and scaled.
class viewed_dataset final : public dataset {
public:
  viewed_dataset(std::shared_ptr<const dataset> base, std::vector<int64_t> shape, float scale)
    : base_(std::move(base)), shape_(std::move(shape)), scale_(scale) {}
  int64_t size() const override { return base_->size(); }
  int64_t feature_count() const override { return base_->feature_count(); }
  int64_t target_count() const override { return base_->target_count(); }
  std::string name() const override { return base_->name(); }
  std::vector<int64_t> sample_shape() const override { return shape_; }
  int64_t class_count() const override { return base_->class_count(); }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override {
    DTRAIN_RETURN_IF_ERROR(base_->gather(indices, n, features, targets));
    if (scale_ != 1.0f)
      for (int64_t i = 0, end = n * feature_count(); i < end; ++i)
        features[i] *= scale_;
    return status::ok();
  }

private:
  std::shared_ptr<const dataset> base_;
  std::vector<int64_t> shape_;
  float scale_;
};

} // namespace

source_spec sub_spec(const std::map<std::string, std::string>& values,
                     const std::string& prefix) {
  source_spec out;
  const std::string head = prefix + ".";
  for (const auto& [key, value] : values)
    if (key.compare(0, head.size(), head) == 0)
      out[key.substr(head.size())] = value;
  return out;
}

std::string source_text(const source_spec& spec) {
  std::string text;
  for (const auto& [key, value] : spec)
    text += key + "=" + value + "\n";
  return text;
}

result<source_spec> parse_source_text(const std::string& text) {
  source_spec spec;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty())
      continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("data source: '" + line + "' is not KEY=VALUE");
    spec[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return spec;
}

std::string format_of_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return fs::exists(fs::path(path) / "index.bin", ec) ? "shards" : "images";
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".csv" || ext == ".tsv" || ext == ".npy" || ext == ".npz")
    return ext.substr(1);
  if (ext == ".h5" || ext == ".hdf5")
    return "hdf5";
  return "";
}

status check_source(const source_spec& spec, const std::string& what) {
  auto format = spec.find("format");
  if (format == spec.end())
    return invalid_argument(what + ": no format (one of " + known_formats() + ")");
  auto keys = format_keys().find(reader_of(format->second));
  if (keys == format_keys().end())
    return invalid_argument(what + ".format: '" + format->second + "' is not one of " +
                            known_formats());
  if (value_of(spec, "path").empty())
    return invalid_argument(what + ": no path (the " + format->second + " source's file or folder)");
  for (const auto& [key, value] : spec) {
    // (an init-capture: C++17 lambdas cannot capture a structured binding; clang refuses)
    auto matches = [&key = key](const std::string& p) { return key_matches(key, p); };
    if (std::any_of(common_keys.begin(), common_keys.end(), matches) ||
        std::any_of(keys->second.begin(), keys->second.end(), matches))
      continue;
    std::string list;
    for (const auto* group : {&common_keys, &keys->second})
      for (const auto& k : *group)
        list += (list.empty() ? "" : ", ") + k;
    return invalid_argument(what + ": unknown key '" + key + "' for format " + format->second +
                            " (known: " + list + ")");
  }
  return status::ok();
}

result<std::shared_ptr<const dataset>> open_source(const source_spec& spec,
                                                   const std::string& what,
                                                   bool classification) {
  DTRAIN_RETURN_IF_ERROR(check_source(spec, what));
  const train::hyperparameters hp = prefixed(spec, what);
  DTRAIN_ASSIGN_OR_RETURN(auto shape, hp.get_int_list(what + ".shape", {}));
  DTRAIN_ASSIGN_OR_RETURN(double scale, hp.get_double(what + ".scale", 1.0));
  DTRAIN_ASSIGN_OR_RETURN(bool cache, hp.get_bool(what + ".cache", false));
  DTRAIN_ASSIGN_OR_RETURN(int64_t cache_mb, hp.get_int(what + ".cache_mb", 8192));
  auto opened = open_reader(spec, what, classification);
  if (!opened)
    return opened.error().with_context(what);
  std::shared_ptr<const dataset> set = std::move(opened).value();
  if (!shape.empty() || scale != 1.0) {
    if (shape.empty())
      shape = set->sample_shape();
    auto viewed = view_dataset(std::move(set), std::move(shape), static_cast<float>(scale));
    if (!viewed)
      return viewed.error().with_context(what);
    set = std::move(viewed).value();
  }
  if (!cache)
    return set;
  auto cached = cache_in_memory(std::move(set), cache_mb << 20);
  return cached ? cached : cached.error().with_context(what);
}

result<std::shared_ptr<const dataset>> view_dataset(std::shared_ptr<const dataset> base,
                                                    std::vector<int64_t> shape, float scale) {
  if (base == nullptr)
    return invalid_argument("view_dataset: the dataset is null");
  const int64_t product = std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                          std::multiplies<int64_t>());
  if (shape.empty() || product != base->feature_count() ||
      std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 1; })) {
    std::string text;
    for (int64_t d : shape)
      text += (text.empty() ? "" : ", ") + std::to_string(d);
    return shape_mismatch(base->name() + ": shape [" + text + "] does not hold its " +
                          std::to_string(base->feature_count()) + " features per sample");
  }
  if (!std::isfinite(scale))
    return invalid_argument(base->name() + ": scale is not a finite number");
  return std::shared_ptr<const dataset>(
      std::make_shared<viewed_dataset>(std::move(base), std::move(shape), scale));
}

} // namespace dtrain::data
