// The NumPy reader: .npy files of every supported dtype and format version,
// .npz archives with stored and deflated members (written here, byte by
// byte, as numpy's savez and savez_compressed lay them out), and every
// malformed file reported with its path.
#include <zlib.h>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dtrain/datasets/npy.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::data::npy_options;
using dtrain::data::read_npy;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The bytes of `values` as `T`s, little-endian (the test host's order).
template <class T>
std::string raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty())
    std::memcpy(&out[0], values.data(), out.size());
  return out;
}

// An .npy image: magic, version, header dict padded to 64 bytes, data.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                int version = 1, const std::string& fortran = "False") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + fortran +
                     ", 'shape': " + shape + ", }";
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < (version == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict + data;
}

void put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

std::string raw_deflate(const std::string& data) {
  z_stream z{};
  BOOST_TEST_REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  BOOST_TEST_REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

struct member {
  std::string name, data;
};

// A zip archive of `members`, stored or deflated, with a zip64 extra field
// in each local header as numpy's savez writes (force_zip64).
std::string zip(const std::vector<member>& members, bool deflated) {
  std::string out, central;
  for (const member& m : members) {
    const std::string body = deflated ? raw_deflate(m.data) : m.data;
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), static_cast<uInt>(m.data.size())));
    const size_t offset = out.size();
    put(out, 0x04034b50, 4);
    put(out, 45, 2);
    put(out, 0, 2);
    put(out, deflated ? 8 : 0, 2);
    put(out, 0, 4);  // time, date
    put(out, crc, 4);
    put(out, 0xffffffffu, 4);
    put(out, 0xffffffffu, 4);
    put(out, m.name.size(), 2);
    put(out, 20, 2);
    out += m.name;
    put(out, 1, 2);
    put(out, 16, 2);
    put(out, m.data.size(), 8);
    put(out, body.size(), 8);
    out += body;
    put(central, 0x02014b50, 4);
    put(central, 45, 2);
    put(central, 45, 2);
    put(central, 0, 2);
    put(central, deflated ? 8 : 0, 2);
    put(central, 0, 4);
    put(central, crc, 4);
    put(central, body.size(), 4);
    put(central, m.data.size(), 4);
    put(central, m.name.size(), 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0, 4);
    put(central, offset, 4);
    central += m.name;
  }
  const size_t directory = out.size();
  out += central;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, central.size(), 4);
  put(out, directory, 4);
  put(out, 0, 2);
  return out;
}

struct gathered {
  std::vector<float> x, y;
};

gathered gather_all(const dtrain::data::dataset& data) {
  gathered out;
  out.x.resize(static_cast<size_t>(data.size() * data.feature_count()));
  out.y.resize(static_cast<size_t>(data.size() * data.target_count()));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < data.size(); ++i)
    idx.push_back(i);
  auto s = data.gather(idx.data(), data.size(), out.x.data(), out.y.data());
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  return out;
}

std::shared_ptr<const dtrain::data::dataset> read_ok(const npy_options& options) {
  auto got = read_npy(options);
  BOOST_TEST_REQUIRE(got.is_ok(), got.error().to_string());
  return *got;
}

void expect_error(const npy_options& options, error_code code,
                  const std::vector<std::string>& parts) {
  auto got = read_npy(options);
  BOOST_TEST_REQUIRE(!got.is_ok());
  BOOST_TEST(dtrain::to_string(got.error().code()) == dtrain::to_string(code));
  const std::string& msg = got.error().message();
  for (const std::string& part : parts)
    BOOST_TEST(contains(msg, part), "message '" << msg << "' lacks '" << part << "'");
}

// Features file `x` holding `image`, read with no targets, expecting failure.
void expect_bad_file(const dtrain::testing::temp_dir& dir, const std::string& image,
                     const std::vector<std::string>& parts, error_code code = error_code::corrupt_data) {
  dtrain::testing::write_file(dir.file("bad.npy"), image);
  npy_options options;
  options.features = dir.file("bad.npy");
  std::vector<std::string> all = parts;
  all.push_back(options.features);
  expect_error(options, code, all);
}

} // namespace

BOOST_AUTO_TEST_SUITE(npy_reader)

BOOST_AUTO_TEST_CASE(float32_features_and_int64_class_targets_are_read) {
  dtrain::testing::temp_dir dir;
  dtrain::testing::write_file(dir.file("x.npy"),
                              npy("<f4", "(3, 2)", raw<float>({1, 2, 3, 4, 5.5f, -6})));
  dtrain::testing::write_file(dir.file("y.npy"), npy("<i8", "(3,)", raw<int64_t>({2, 0, 4})));
  npy_options options{dir.file("x.npy"), dir.file("y.npy")};
  auto data = read_ok(options);
  BOOST_TEST(data->size() == 3);
  BOOST_TEST(data->feature_count() == 2);
  BOOST_TEST(data->target_count() == 1);
  BOOST_TEST(data->class_count() == 5);
  std::vector<int64_t> idx = {2, 0};
  std::vector<float> x(4), y(2);
  BOOST_TEST_REQUIRE(data->gather(idx.data(), 2, x.data(), y.data()).is_ok());
  BOOST_TEST(x == (std::vector<float>{5.5f, -6, 1, 2}));
  BOOST_TEST(y == (std::vector<float>{4, 2}));
  idx = {3};
  auto out = data->gather(idx.data(), 1, x.data(), y.data());
  BOOST_TEST(!out.is_ok());
  BOOST_TEST(contains(out.message(), "record 3"));
}

BOOST_AUTO_TEST_CASE(every_supported_dtype_converts_to_float) {
  dtrain::testing::temp_dir dir;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"<f8", raw<double>({1.5, -2.25})},
      {"<f2", raw<uint16_t>({0x3e00, 0xc080})},  // 1.5, -2.25 in half precision
      {"|i1", raw<int8_t>({-128, 127})},
      {"|u1", raw<uint8_t>({0, 255})},
      {"<i2", raw<int16_t>({-300, 300})},
      {"<u2", raw<uint16_t>({0, 65535})},
      {"<i4", raw<int32_t>({-70000, 70000})},
      {"<u4", raw<uint32_t>({1, 4000000})},
      {"<i8", raw<int64_t>({-5, 5})},
      {"<u8", raw<uint64_t>({7, 9})},
      {"|b1", std::string("\x00\x01", 2)},
  };
  const std::vector<std::vector<float>> expected = {
      {1.5f, -2.25f}, {1.5f, -2.25f}, {-128, 127}, {0, 255},   {-300, 300}, {0, 65535},
      {-70000, 70000}, {1, 4000000},  {-5, 5},     {7, 9},     {0, 1}};
  for (size_t i = 0; i < files.size(); ++i) {
    dtrain::testing::write_file(dir.file("a.npy"), npy(files[i].first, "(2,)", files[i].second));
    npy_options options;
    options.features = dir.file("a.npy");
    auto data = read_ok(options);
    BOOST_TEST(data->target_count() == 0);
    BOOST_TEST(gather_all(*data).x == expected[i], "dtype " << files[i].first);
  }
}

BOOST_AUTO_TEST_CASE(format_versions_2_and_3_are_read) {
  dtrain::testing::temp_dir dir;
  for (int version : {2, 3}) {
    dtrain::testing::write_file(dir.file("a.npy"),
                                npy("<f4", "(2, 1)", raw<float>({7, 8}), version));
    npy_options options;
    options.features = dir.file("a.npy");
    BOOST_TEST(gather_all(*read_ok(options)).x == (std::vector<float>{7, 8}));
  }
}

BOOST_AUTO_TEST_CASE(sample_shape_is_the_shape_after_the_first_axis) {
  dtrain::testing::temp_dir dir;
  std::vector<uint8_t> pixels(2 * 3 * 4);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>(i);
  dtrain::testing::write_file(dir.file("img.npy"), npy("|u1", "(2, 3, 4)", raw(pixels)));
  npy_options options;
  options.features = dir.file("img.npy");
  auto data = read_ok(options);
  BOOST_TEST(data->feature_count() == 12);
  BOOST_TEST(data->sample_shape() == (std::vector<int64_t>{3, 4}));
  std::vector<int64_t> idx = {1};
  std::vector<float> x(12);
  BOOST_TEST_REQUIRE(data->gather(idx.data(), 1, x.data(), nullptr).is_ok());
  BOOST_TEST(x[0] == 12.0f);
  BOOST_TEST(x[11] == 23.0f);
}

BOOST_AUTO_TEST_CASE(npz_members_stored_and_deflated_are_read_by_name) {
  dtrain::testing::temp_dir dir;
  const std::vector<member> members = {
      {"x.npy", npy("<f4", "(2, 2)", raw<float>({1, 2, 3, 4}))},
      {"labels.npy", npy("<i8", "(2,)", raw<int64_t>({1, 0}))},
  };
  for (bool deflated : {false, true}) {
    dtrain::testing::write_file(dir.file("d.npz"), zip(members, deflated));
    npy_options options{dir.file("d.npz"), "labels"};
    auto data = read_ok(options);
    auto rows = gather_all(*data);
    BOOST_TEST(rows.x == (std::vector<float>{1, 2, 3, 4}), "deflated " << deflated);
    BOOST_TEST(rows.y == (std::vector<float>{1, 0}), "deflated " << deflated);
    BOOST_TEST(data->class_count() == 2);
  }
}

BOOST_AUTO_TEST_CASE(regression_targets_keep_their_values_and_width) {
  dtrain::testing::temp_dir dir;
  dtrain::testing::write_file(dir.file("x.npy"), npy("<f4", "(2,)", raw<float>({1, 2})));
  dtrain::testing::write_file(dir.file("y.npy"),
                              npy("<f8", "(2, 2)", raw<double>({0.5, -1, 2.5, 3})));
  npy_options options{dir.file("x.npy"), dir.file("y.npy")};
  options.classification = false;
  auto data = read_ok(options);
  BOOST_TEST(data->target_count() == 2);
  BOOST_TEST(data->class_count() == 0);
  BOOST_TEST(data->sample_shape() == (std::vector<int64_t>{1}));
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{0.5f, -1, 2.5f, 3}));
  options.classification = true;
  expect_error(options, error_code::shape_mismatch, {dir.file("y.npy"), "one value per record"});
}

BOOST_AUTO_TEST_CASE(bad_magic_is_refused_naming_the_file) {
  dtrain::testing::temp_dir dir;
  expect_bad_file(dir, "PK\x03\x04 not numpy at all", {"bad magic"});
  expect_bad_file(dir, npy("<f4", "(1,)", raw<float>({1}), 7), {"version 7"});
}

// Found reading the code (fuzz/npy_file times out on it): a 129-byte file
// of shape (2^62, 0) was 2^62
// records of no features (a gather of every record never ends).
BOOST_AUTO_TEST_CASE(features_of_no_values_per_record_are_refused) {
  dtrain::testing::temp_dir dir;
  expect_bad_file(dir, npy("<f4", "(3, 0)", ""), {"records of no values"});
  expect_bad_file(dir, npy("<f4", "(4611686018427387904, 2, 0)", ""), {"records of no values"});
}

BOOST_AUTO_TEST_CASE(truncated_header_or_data_is_refused) {
  dtrain::testing::temp_dir dir;
  std::string whole = npy("<f4", "(4, 2)", raw<float>({1, 2, 3, 4, 5, 6, 7, 8}));
  expect_bad_file(dir, whole.substr(0, whole.size() - 4), {"truncated", "28 bytes", "32"});
  expect_bad_file(dir, whole.substr(0, 30), {"cut short inside the .npy header"});
  expect_bad_file(dir, whole + "xx", {"34 bytes", "promises 32"});
  expect_bad_file(dir, npy("<f4", "(1000000000000, 1000)", ""), {"truncated"});
}

BOOST_AUTO_TEST_CASE(unsupported_dtypes_and_fortran_order_are_named) {
  dtrain::testing::temp_dir dir;
  expect_bad_file(dir, npy("<c8", "(1,)", std::string(8, '\0')), {"'<c8'", "complex"});
  expect_bad_file(dir, npy("|O", "(1,)", std::string(8, '\0')), {"'|O'"});
  expect_bad_file(dir, npy("|O8", "(1,)", std::string(8, '\0')), {"'|O8'", "object"});
  expect_bad_file(dir, npy(">f4", "(1,)", std::string(4, '\0')), {"'>f4'", "big-endian"});
  expect_bad_file(dir, npy("<U3", "(1,)", std::string(12, '\0')), {"'<U3'", "not supported"});
  expect_bad_file(dir, npy("<f4", "(1, 2)", std::string(8, '\0'), 1, "True"),
                  {"fortran_order is True"});
  expect_bad_file(dir, npy("<f4", "()", std::string(4, '\0')), {"0-d array"});
}

BOOST_AUTO_TEST_CASE(record_count_mismatch_names_both_files) {
  dtrain::testing::temp_dir dir;
  dtrain::testing::write_file(dir.file("x.npy"), npy("<f4", "(3,)", raw<float>({1, 2, 3})));
  dtrain::testing::write_file(dir.file("y.npy"), npy("<i4", "(2,)", raw<int32_t>({0, 1})));
  npy_options options{dir.file("x.npy"), dir.file("y.npy")};
  expect_error(options, error_code::shape_mismatch,
               {dir.file("x.npy"), "3 records", dir.file("y.npy"), "has 2"});
}

BOOST_AUTO_TEST_CASE(bad_class_target_names_the_record) {
  dtrain::testing::temp_dir dir;
  dtrain::testing::write_file(dir.file("x.npy"), npy("<f4", "(3,)", raw<float>({1, 2, 3})));
  dtrain::testing::write_file(dir.file("y.npy"), npy("<f4", "(3,)", raw<float>({0, 1, 1.5f})));
  npy_options options{dir.file("x.npy"), dir.file("y.npy")};
  expect_error(options, error_code::corrupt_data, {dir.file("y.npy"), "record 2", "class index"});
}

BOOST_AUTO_TEST_CASE(missing_npz_member_lists_the_archive_arrays) {
  dtrain::testing::temp_dir dir;
  dtrain::testing::write_file(
      dir.file("d.npz"), zip({{"features.npy", npy("<f4", "(1,)", raw<float>({1}))}}, false));
  npy_options options;
  options.features = dir.file("d.npz");
  expect_error(options, error_code::not_found,
               {dir.file("d.npz"), "no array 'x'", "arrays: features"});
}

BOOST_AUTO_TEST_CASE(damaged_npz_archives_are_refused_naming_the_file) {
  dtrain::testing::temp_dir dir;
  const std::string stored = zip({{"x.npy", npy("<f4", "(2,)", raw<float>({1, 2}))}}, false);
  dtrain::testing::write_file(dir.file("a.npz"), stored.substr(0, 40));
  npy_options options;
  options.features = dir.file("a.npz");
  expect_error(options, error_code::corrupt_data, {dir.file("a.npz"), "end-of-central-directory"});
  std::string deflated = zip({{"x.npy", npy("<f4", "(2,)", raw<float>({1, 2}))}}, true);
  deflated[60] = static_cast<char>(deflated[60] ^ 0x55);  // inside the deflated data
  dtrain::testing::write_file(dir.file("a.npz"), deflated);
  expect_error(options, error_code::corrupt_data, {dir.file("a.npz"), "array 'x'"});
}

// Found with fuzz/npy_file's regression input: a deflated member's size
// sized the buffer before a byte was inflated (4 GB from a 353-byte file).
BOOST_AUTO_TEST_CASE(a_deflated_member_claiming_more_than_deflate_can_pack_is_refused) {
  dtrain::testing::temp_dir dir;
  std::string deflated = zip({{"x.npy", npy("<f4", "(2,)", raw<float>({1, 2}))}}, true);
  const size_t central = deflated.find(std::string("PK\x01\x02", 4));
  BOOST_TEST_REQUIRE(central != std::string::npos);
  const std::string claim("\x00\x00\x00\xf0", 4);  // 0xf0000000 bytes, little-endian
  deflated.replace(central + 24, 4, claim);
  dtrain::testing::write_file(dir.file("a.npz"), deflated);
  npy_options options;
  options.features = dir.file("a.npz");
  expect_error(options, error_code::corrupt_data, {dir.file("a.npz"), "at most 1032:1"});
}

BOOST_AUTO_TEST_CASE(missing_file_is_not_found) {
  dtrain::testing::temp_dir dir;
  npy_options options;
  options.features = dir.file("none.npy");
  expect_error(options, error_code::not_found, {dir.file("none.npy")});
  options.features = "";
  expect_error(options, error_code::invalid_argument, {"no features path"});
}

BOOST_AUTO_TEST_SUITE_END()
