// The HDF5 reader: files written here with the HDF5 C API, read back exactly
// (any numeric type becomes float), rows gathered in any order from several
// threads, and every malformed file reported naming the file and dataset.
#include <hdf5.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/datasets/hdf5.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::status;
using dtrain::data::dataset;
using dtrain::data::hdf5_options;
using dtrain::data::read_hdf5;
using dtrain::testing::temp_dir;

// An HDF5 file being written by a test; closed by the destructor.
class h5_writer {
public:
  explicit h5_writer(const std::string& path)
    : file_(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) {
    BOOST_TEST_REQUIRE(file_ >= 0);
  }
  ~h5_writer() { H5Fclose(file_); }

  // Writes `values` (in memory type `memory`) as a dataset of file type
  // `stored` and shape `dims`; a name with '/' creates the groups on the way.
  template <class T>
  void write(const std::string& name, hid_t stored, hid_t memory,
             const std::vector<hsize_t>& dims, const std::vector<T>& values) {
    const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(static_cast<int>(dims.size()),
                                                        dims.data(), nullptr);
    const hid_t links = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(links, 1);
    const hid_t set = H5Dcreate2(file_, name.c_str(), stored, space, links, H5P_DEFAULT,
                                 H5P_DEFAULT);
    BOOST_TEST_REQUIRE(set >= 0);
    BOOST_TEST_REQUIRE(H5Dwrite(set, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    H5Dclose(set);
    H5Pclose(links);
    H5Sclose(space);
  }

  void write_strings(const std::string& name, const std::string& packed, size_t width) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, width);
    const hsize_t n = packed.size() / width;
    write(name, type, type, {n}, std::vector<char>(packed.begin(), packed.end()));
    H5Tclose(type);
  }

private:
  hid_t file_;
};

std::vector<float> feature_values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i) * 0.25f - 7.0f;
  return v;
}

// A file "data.h5" with x float32 [N, 2, 3] and y int64 labels i % 4.
std::string write_images(const temp_dir& tmp, hsize_t n) {
  const std::string path = tmp.file("data.h5");
  h5_writer out(path);
  out.write("x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {n, 2, 3}, feature_values(n * 6));
  std::vector<int64_t> labels(n);
  for (hsize_t i = 0; i < n; ++i)
    labels[i] = static_cast<int64_t>(i % 4);
  out.write("y", H5T_STD_I64LE, H5T_NATIVE_INT64, {n}, labels);
  return path;
}

std::shared_ptr<const dataset> read_ok(const hdf5_options& options) {
  auto set = read_hdf5(options);
  BOOST_TEST_REQUIRE(set.is_ok(), set.error().to_string());
  return *set;
}

status read_error(const hdf5_options& options) {
  auto set = read_hdf5(options);
  BOOST_TEST_REQUIRE(!set.is_ok());
  return set.error();
}

bool names(const status& s, const std::string& text) {
  const bool found = s.message().find(text) != std::string::npos;
  if (!found)
    BOOST_TEST_MESSAGE("'" << text << "' not in: " << s.to_string());
  return found;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hdf5_reader)

BOOST_AUTO_TEST_CASE(rows_gathered_in_any_order_match_the_file) {
  temp_dir tmp;
  const std::string path = write_images(tmp, 50);
  auto set = read_ok({path, "x", "y", true});
  BOOST_TEST(set->size() == 50);
  BOOST_TEST(set->feature_count() == 6);
  BOOST_TEST(set->target_count() == 1);
  BOOST_TEST((set->sample_shape() == std::vector<int64_t>{2, 3}));
  BOOST_TEST(set->class_count() == 4);
  const std::vector<int64_t> order = {49, 3, 4, 5, 3, 0, 17, 48, 6};  // runs, repeats
  std::vector<float> x(order.size() * 6), y(order.size());
  BOOST_TEST_REQUIRE(set->gather(order.data(), 9, x.data(), y.data()).is_ok());
  const std::vector<float> all = feature_values(50 * 6);
  for (size_t i = 0; i < order.size(); ++i) {
    for (size_t f = 0; f < 6; ++f)
      BOOST_TEST(x[i * 6 + f] == all[static_cast<size_t>(order[i]) * 6 + f]);
    BOOST_TEST(y[i] == static_cast<float>(order[i] % 4));
  }
}

BOOST_AUTO_TEST_CASE(integer_and_double_types_become_floats) {
  temp_dir tmp;
  const std::string path = tmp.file("types.h5");
  {
    h5_writer out(path);
    out.write("pixels", H5T_STD_U8LE, H5T_NATIVE_UINT8, {3, 2},
              std::vector<uint8_t>{0, 255, 7, 128, 1, 2});
    out.write("wide", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, {3}, std::vector<double>{1.5, -2.25, 1e6});
    out.write("labels", H5T_STD_I16BE, H5T_NATIVE_INT16, {3}, std::vector<int16_t>{2, 0, 9});
    out.write("targets2", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {3, 2},
              std::vector<double>{0.5, -1, 2, 3, 4.75, 5});
  }
  auto pixels = read_ok({path, "pixels", "labels", true});
  BOOST_TEST(pixels->class_count() == 10);
  std::vector<int64_t> all = {0, 1, 2};
  std::vector<float> x(6), y(3);
  BOOST_TEST_REQUIRE(pixels->gather(all.data(), 3, x.data(), y.data()).is_ok());
  BOOST_TEST((x == std::vector<float>{0, 255, 7, 128, 1, 2}));
  BOOST_TEST((y == std::vector<float>{2, 0, 9}));
  auto wide = read_ok({path, "wide", "targets2", false});  // [N] features: one each
  BOOST_TEST((wide->sample_shape() == std::vector<int64_t>{1}));
  BOOST_TEST(wide->target_count() == 2);
  BOOST_TEST(wide->class_count() == 0);
  std::vector<float> w(3), t(6);
  BOOST_TEST_REQUIRE(wide->gather(all.data(), 3, w.data(), t.data()).is_ok());
  BOOST_TEST((w == std::vector<float>{1.5f, -2.25f, 1e6f}));
  BOOST_TEST((t == std::vector<float>{0.5f, -1, 2, 3, 4.75f, 5}));
}

BOOST_AUTO_TEST_CASE(datasets_inside_groups_and_no_targets) {
  temp_dir tmp;
  const std::string path = tmp.file("grouped.h5");
  {
    h5_writer out(path);
    out.write("train/x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {4, 3}, feature_values(12));
  }
  auto set = read_ok({path, "train/x", "", true});
  BOOST_TEST(set->size() == 4);
  BOOST_TEST(set->target_count() == 0);
  const int64_t row = 2;
  std::vector<float> x(3);
  BOOST_TEST_REQUIRE(set->gather(&row, 1, x.data(), nullptr).is_ok());
  BOOST_TEST(x[0] == feature_values(12)[6]);
}

BOOST_AUTO_TEST_CASE(a_missing_dataset_is_not_found_listing_what_the_file_has) {
  temp_dir tmp;
  const std::string path = write_images(tmp, 5);
  const status s = read_error({path, "features", "y", true});
  BOOST_TEST(s.code() == error_code::not_found);
  BOOST_TEST(names(s, path + ": dataset 'features' does not exist"));
  BOOST_TEST(names(s, "the file has 'x', 'y'"));
  const status nested = read_error({path, "x", "no/such/labels", true});
  BOOST_TEST(nested.code() == error_code::not_found);
  BOOST_TEST(names(nested, "'no/such/labels'"));
}

BOOST_AUTO_TEST_CASE(wrong_ranks_are_refused_naming_the_dataset) {
  temp_dir tmp;
  const std::string path = tmp.file("ranks.h5");
  {
    h5_writer out(path);
    out.write("scalar", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {}, std::vector<float>{1});
    out.write("x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2}, feature_values(4));
    out.write("cube", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 1, 1}, std::vector<float>{0, 1});
    out.write("pairs", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2}, std::vector<float>{0, 1, 1, 0});
  }
  const status scalar = read_error({path, "scalar", "", true});
  BOOST_TEST(scalar.code() == error_code::invalid_argument);
  BOOST_TEST(names(scalar, path + ": dataset 'scalar' is a scalar"));
  const status cube = read_error({path, "x", "cube", true});
  BOOST_TEST(cube.code() == error_code::invalid_argument);
  BOOST_TEST(names(cube, path + ": dataset 'cube' has shape [2, 1, 1]"));
  const status pairs = read_error({path, "x", "pairs", true});
  BOOST_TEST(names(pairs, "'pairs' has shape [2, 2]: class targets must be one per sample"));
}

BOOST_AUTO_TEST_CASE(different_sample_counts_are_a_shape_mismatch_naming_both) {
  temp_dir tmp;
  const std::string path = tmp.file("n.h5");
  {
    h5_writer out(path);
    out.write("x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {4, 3}, feature_values(12));
    out.write("y", H5T_STD_I32LE, H5T_NATIVE_INT32, {5}, std::vector<int32_t>{0, 1, 0, 1, 0});
  }
  const status s = read_error({path, "x", "y", true});
  BOOST_TEST(s.code() == error_code::shape_mismatch);
  BOOST_TEST(names(s, path + ": dataset 'y' has 5 samples, dataset 'x' has 4"));
}

BOOST_AUTO_TEST_CASE(string_datasets_are_refused_as_non_numeric) {
  temp_dir tmp;
  const std::string path = tmp.file("strings.h5");
  {
    h5_writer out(path);
    out.write("x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2}, feature_values(4));
    out.write_strings("names", std::string("cat\0\0dog\0\0", 10), 5);
  }
  const status as_targets = read_error({path, "x", "names", true});
  BOOST_TEST(as_targets.code() == error_code::invalid_argument);
  BOOST_TEST(names(as_targets, path + ": dataset 'names' holds string values, not numbers"));
  const status as_features = read_error({path, "names", "", true});
  BOOST_TEST(names(as_features, "dataset 'names' holds string values"));
}

BOOST_AUTO_TEST_CASE(bad_class_labels_name_the_sample) {
  temp_dir tmp;
  const std::string path = tmp.file("labels.h5");
  {
    h5_writer out(path);
    out.write("x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {3, 1}, feature_values(3));
    out.write("y", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {3}, std::vector<float>{0, 2.5f, 1});
    out.write("neg", H5T_STD_I8LE, H5T_NATIVE_INT8, {3}, std::vector<int8_t>{0, 1, -1});
  }
  const status half = read_error({path, "x", "y", true});
  BOOST_TEST(half.code() == error_code::invalid_argument);
  BOOST_TEST(names(half, "dataset 'y': sample 1 has class 2.5"));
  BOOST_TEST(names(read_error({path, "x", "neg", true}), "dataset 'neg': sample 2 has class -1"));
  BOOST_TEST(read_hdf5({path, "x", "y", false}).is_ok());  // fine as regression targets
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_hdf5_is_corrupt_data_and_a_missing_one_not_found) {
  temp_dir tmp;
  dtrain::testing::write_file(tmp.file("fake.h5"), "just some text, not HDF5 at all\n");
  const status s = read_error({tmp.file("fake.h5"), "x", "y", true});
  BOOST_TEST(s.code() == error_code::corrupt_data);
  BOOST_TEST(names(s, tmp.file("fake.h5") + ": not an HDF5 file"));
  BOOST_TEST(names(s, "dataset 'x'"));
  const status missing = read_error({tmp.file("absent.h5"), "x", "y", true});
  BOOST_TEST(missing.code() == error_code::not_found);
  BOOST_TEST(names(missing, tmp.file("absent.h5")));
}

BOOST_AUTO_TEST_CASE(concurrent_gathers_from_four_threads_are_exact) {
  temp_dir tmp;
  const std::string path = write_images(tmp, 400);
  auto set = read_ok({path, "x", "y", true});
  const std::vector<float> all = feature_values(400 * 6);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<int64_t> order(32);
      std::vector<float> x(32 * 6), y(32);
      for (int round = 0; round < 50; ++round) {
        for (size_t i = 0; i < order.size(); ++i)
          order[i] = static_cast<int64_t>((i * 37 + static_cast<size_t>(round * 11 + t * 101)) % 400);
        if (!set->gather(order.data(), 32, x.data(), y.data()).is_ok())
          ++failures;
        for (size_t i = 0; i < order.size(); ++i) {
          const auto row = static_cast<size_t>(order[i]);
          if (!std::equal(x.begin() + i * 6, x.begin() + i * 6 + 6, all.begin() + row * 6) ||
              y[i] != static_cast<float>(row % 4))
            ++failures;
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  BOOST_TEST(failures.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
