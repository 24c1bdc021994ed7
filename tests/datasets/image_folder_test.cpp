// read_image_folder and decode_image: PNG and JPEG files written here with
// libpng and libjpeg, read back as CHW floats in class order, resampled,
// and every malformed file reported as a status naming it.
#include <png.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstdio>  // before jpeglib.h, which needs FILE
#include <jpeglib.h>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/datasets/image_decode.hpp"
#include "dtrain/datasets/image_folder.hpp"
#include "support/png_writer.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::data::dataset;
using dtrain::data::decode_image;
using dtrain::data::image_folder_dataset;
using dtrain::data::image_folder_options;
using dtrain::data::read_image_folder;
using dtrain::testing::temp_dir;
using dtrain::testing::write_file;
using pixels = std::vector<uint8_t>;

// A PNG of HWC 8-bit pixels, 1 or 3 channels (libpng's simplified writer).
std::string png_bytes(int width, int height, int channels, const pixels& px) {
  std::string out = dtrain::testing::png_bytes(width, height, channels, px.data());
  BOOST_REQUIRE(!out.empty());
  return out;
}

// A JPEG (quality 100) of HWC 8-bit pixels, 1 or 3 channels.
std::string jpeg_bytes(int width, int height, int channels, const pixels& px) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr errors{};
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(px.data() + cinfo.next_scanline * width * channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

// Pixels whose value tells their place: (seed + 7y + 3x + 50c) mod 256.
pixels pattern(int width, int height, int channels, int seed) {
  pixels px(static_cast<size_t>(width * height * channels));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        px[static_cast<size_t>((y * width + x) * channels + c)] =
            static_cast<uint8_t>((seed + 7 * y + 3 * x + 50 * c) % 256);
  return px;
}

pixels constant(int width, int height, int channels, const std::vector<uint8_t>& value) {
  pixels px(static_cast<size_t>(width * height * channels));
  for (size_t i = 0; i < px.size(); ++i)
    px[i] = value[i % static_cast<size_t>(channels)];
  return px;
}

// Writes `bytes` to root/folder/name, creating the folder.
void put(const temp_dir& root, const std::string& folder, const std::string& name,
         const std::string& bytes) {
  std::filesystem::create_directories(root.file(folder));
  write_file(root.file(folder + "/" + name), bytes);
}

std::shared_ptr<const dataset> open(const image_folder_options& options) {
  auto opened = read_image_folder(options);
  BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
  return opened.value();
}

image_folder_options options_for(const temp_dir& root) {
  image_folder_options options;
  options.path = root.path();
  return options;
}

// Gathers every record; the status comes back, features and targets too.
struct gathered {
  dtrain::status result;
  std::vector<float> features, targets;
};

gathered gather_all(const dataset& data, std::vector<int64_t> indices = {}) {
  if (indices.empty())
    for (int64_t i = 0; i < data.size(); ++i)
      indices.push_back(i);
  gathered out;
  out.features.resize(indices.size() * static_cast<size_t>(data.feature_count()));
  out.targets.resize(indices.size());
  out.result = data.gather(indices.data(), static_cast<int64_t>(indices.size()),
                           out.features.data(), out.targets.data());
  return out;
}

// The features of one sample in CHW order as floats in [0, 1].
std::vector<float> chw(int width, int height, int channels, const pixels& px) {
  std::vector<float> out(px.size());
  for (int c = 0; c < channels; ++c)
    for (int p = 0; p < width * height; ++p)
      out[static_cast<size_t>(c * width * height + p)] =
          px[static_cast<size_t>(p * channels + c)] / 255.0f;
  return out;
}

void check_close(const float* got, const std::vector<float>& want, float tolerance) {
  for (size_t i = 0; i < want.size(); ++i)
    BOOST_REQUIRE_MESSAGE(std::fabs(got[i] - want[i]) <= tolerance,
                          "feature " << i << ": " << got[i] << " vs " << want[i]);
}

void check_fails(const dtrain::status& s, error_code code, const std::string& names) {
  BOOST_TEST_INFO("status: " << s.to_string());
  BOOST_CHECK(s.code() == code);
  BOOST_CHECK(s.message().find(names) != std::string::npos);
}

// A PNG in any of libpng's simplified formats (16-bit for the linear ones).
std::string png_of_format(png_uint_32 format, int width, int height, const void* px,
                          const void* colormap = nullptr, int colors = 0) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  image.colormap_entries = static_cast<png_uint_32>(colors);
  png_alloc_size_t size = 0;
  BOOST_REQUIRE(png_image_write_to_memory(&image, nullptr, &size, 0, px, 0, colormap));
  std::string out(size, '\0');
  BOOST_REQUIRE(png_image_write_to_memory(&image, out.data(), &size, 0, px, 0, colormap));
  out.resize(size);
  return out;
}

dtrain::data::image decoded(const std::string& bytes) {
  auto img = decode_image(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                          "variant");
  BOOST_REQUIRE_MESSAGE(img.is_ok(), img.error().to_string());
  return img.value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(image_folder)

BOOST_AUTO_TEST_CASE(grey_pngs_read_as_chw_floats_in_sorted_class_and_file_order) {
  temp_dir root;
  // Classes and files created out of order; a text file, a nested folder
  // and a hidden folder are skipped.
  put(root, "zebra", "b.png", png_bytes(3, 2, 1, pattern(3, 2, 1, 30)));
  put(root, "ant", "2.PNG", png_bytes(3, 2, 1, pattern(3, 2, 1, 20)));
  put(root, "ant", "10.png", png_bytes(3, 2, 1, pattern(3, 2, 1, 10)));
  put(root, "ant", "notes.txt", "not an image");
  put(root, "ant/nested", "x.png", "skipped");
  put(root, ".cache", "y.png", "skipped");
  auto data = open(options_for(root));
  BOOST_TEST(data->size() == 3);
  BOOST_TEST(data->class_count() == 2);
  BOOST_TEST(data->sample_shape() == (std::vector<int64_t>{1, 2, 3}), boost::test_tools::per_element());
  auto names = dynamic_cast<const image_folder_dataset&>(*data).class_names();
  BOOST_TEST(names == (std::vector<std::string>{"ant", "zebra"}), boost::test_tools::per_element());
  gathered all = gather_all(*data);
  BOOST_REQUIRE_MESSAGE(all.result.is_ok(), all.result.to_string());
  // "10.png" sorts before "2.PNG" (byte order).
  check_close(all.features.data(), chw(3, 2, 1, pattern(3, 2, 1, 10)), 0.0f);
  check_close(all.features.data() + 6, chw(3, 2, 1, pattern(3, 2, 1, 20)), 0.0f);
  check_close(all.features.data() + 12, chw(3, 2, 1, pattern(3, 2, 1, 30)), 0.0f);
  BOOST_TEST(all.targets == (std::vector<float>{0, 0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rgb_png_is_exact_and_jpegs_are_close) {
  temp_dir root;
  put(root, "a", "1.png", png_bytes(4, 3, 3, pattern(4, 3, 3, 5)));
  put(root, "b", "2.jpg", jpeg_bytes(4, 3, 3, constant(4, 3, 3, {200, 100, 30})));
  put(root, "c", "3.JPEG", jpeg_bytes(4, 3, 1, constant(4, 3, 1, {90})));
  auto data = open(options_for(root));
  BOOST_TEST(data->sample_shape() == (std::vector<int64_t>{3, 3, 4}), boost::test_tools::per_element());
  gathered all = gather_all(*data);
  BOOST_REQUIRE_MESSAGE(all.result.is_ok(), all.result.to_string());
  check_close(all.features.data(), chw(4, 3, 3, pattern(4, 3, 3, 5)), 0.0f);
  // JPEG is lossy (chroma subsampling, rounding): within 3/255.
  check_close(all.features.data() + 36, chw(4, 3, 3, constant(4, 3, 3, {200, 100, 30})),
              3.0f / 255);
  // The grey JPEG given three channels repeats its grey.
  check_close(all.features.data() + 72, chw(4, 3, 3, constant(4, 3, 3, {90, 90, 90})),
              1.0f / 255);
}

BOOST_AUTO_TEST_CASE(channels_option_converts_rgb_to_luma_and_grey_to_rgb) {
  temp_dir root;
  put(root, "a", "rgb.png", png_bytes(2, 2, 3, constant(2, 2, 3, {255, 0, 0})));
  put(root, "b", "grey.png", png_bytes(2, 2, 1, constant(2, 2, 1, {51})));
  auto options = options_for(root);
  options.channels = 1;
  auto grey = open(options);
  gathered g = gather_all(*grey);
  BOOST_REQUIRE_MESSAGE(g.result.is_ok(), g.result.to_string());
  check_close(g.features.data(), std::vector<float>(4, 0.299f), 1e-6f);
  check_close(g.features.data() + 4, std::vector<float>(4, 0.2f), 1e-6f);
  options.channels = 3;
  gathered rgb = gather_all(*open(options));
  BOOST_REQUIRE_MESSAGE(rgb.result.is_ok(), rgb.result.to_string());
  check_close(rgb.features.data() + 12, std::vector<float>(12, 0.2f), 1e-6f);
}

BOOST_AUTO_TEST_CASE(resize_to_half_averages_two_by_two_blocks) {
  temp_dir root;
  const pixels px = pattern(4, 4, 1, 0);
  put(root, "a", "1.png", png_bytes(4, 4, 1, px));
  put(root, "a", "2.png", png_bytes(3, 5, 1, constant(3, 5, 1, {128})));  // another size
  auto options = options_for(root);
  options.height = 2;
  options.width = 2;
  gathered all = gather_all(*open(options));
  BOOST_REQUIRE_MESSAGE(all.result.is_ok(), all.result.to_string());
  std::vector<float> want;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) {
      auto at = [&](int yy, int xx) { return px[static_cast<size_t>(yy * 4 + xx)] / 255.0f; };
      want.push_back((at(2 * y, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x) +
                      at(2 * y + 1, 2 * x + 1)) / 4);
    }
  check_close(all.features.data(), want, 1e-6f);
  check_close(all.features.data() + 4, std::vector<float>(4, 128 / 255.0f), 1e-6f);
}

BOOST_AUTO_TEST_CASE(center_crop_keeps_the_middle_after_fitting_the_short_side) {
  temp_dir root;
  const pixels px = pattern(8, 4, 1, 0);  // 8 wide, 4 high
  put(root, "a", "1.png", png_bytes(8, 4, 1, px));
  auto options = options_for(root);
  options.fit = "center_crop";
  options.height = 4;
  options.width = 4;
  gathered same = gather_all(*open(options));
  BOOST_REQUIRE_MESSAGE(same.result.is_ok(), same.result.to_string());
  std::vector<float> middle;
  for (int y = 0; y < 4; ++y)
    for (int x = 2; x < 6; ++x)
      middle.push_back(px[static_cast<size_t>(y * 8 + x)] / 255.0f);
  check_close(same.features.data(), middle, 0.0f);
  // 2 x 2: the short side (4) shrinks to 2, so the middle 4 x 4 is halved.
  options.height = 2;
  options.width = 2;
  gathered half = gather_all(*open(options));
  BOOST_REQUIRE_MESSAGE(half.result.is_ok(), half.result.to_string());
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) {
      auto at = [&](int yy, int xx) { return middle[static_cast<size_t>(yy * 4 + xx)]; };
      float want = (at(2 * y, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x) +
                    at(2 * y + 1, 2 * x + 1)) / 4;
      BOOST_TEST(half.features[static_cast<size_t>(y * 2 + x)] == want, boost::test_tools::tolerance(1e-5f));
    }
}

BOOST_AUTO_TEST_CASE(truncated_png_is_corrupt_data_naming_the_file) {
  temp_dir root;
  put(root, "a", "1.png", png_bytes(5, 5, 1, pattern(5, 5, 1, 0)));
  std::string whole = png_bytes(5, 5, 1, pattern(5, 5, 1, 1));
  put(root, "a", "2.png", whole.substr(0, whole.size() / 2 + 10));
  auto options = options_for(root);
  options.path += "//";  // trailing slashes do not reach the file names
  auto data = open(options);
  gathered bad = gather_all(*data, {1});
  check_fails(bad.result, error_code::corrupt_data, root.file("a/2.png") + ": bad PNG");
  check_fails(bad.result, error_code::corrupt_data, "record 1");
  BOOST_TEST(gather_all(*data, {0}).result.is_ok());
}

BOOST_AUTO_TEST_CASE(truncated_jpeg_is_corrupt_data_naming_the_file) {
  temp_dir root;
  put(root, "a", "1.jpg", jpeg_bytes(32, 32, 3, pattern(32, 32, 3, 0)));
  std::string whole = jpeg_bytes(32, 32, 3, pattern(32, 32, 3, 9));
  // Cut inside the entropy-coded scan, which libjpeg alone would fill with grey.
  put(root, "a", "2.jpg", whole.substr(0, whole.size() - 40));
  auto data = open(options_for(root));
  check_fails(gather_all(*data, {1}).result, error_code::corrupt_data, "2.jpg");
  BOOST_TEST(gather_all(*data, {0}).result.is_ok());
}

BOOST_AUTO_TEST_CASE(garbage_named_png_is_corrupt_data_at_open_or_gather) {
  temp_dir root;
  put(root, "a", "1.png", png_bytes(2, 2, 1, pattern(2, 2, 1, 0)));
  put(root, "a", "2.png", "this is not an image at all");
  auto data = open(options_for(root));
  check_fails(gather_all(*data, {1}).result, error_code::corrupt_data, "2.png: not a PNG or JPEG");
  // The same garbage as the first image fails the open.
  temp_dir other;
  put(other, "a", "0.png", "this is not an image at all");
  auto opened = read_image_folder(options_for(other));
  BOOST_REQUIRE(!opened.is_ok());
  check_fails(opened.error(), error_code::corrupt_data, "0.png");
}

BOOST_AUTO_TEST_CASE(another_size_without_a_set_size_is_shape_mismatch) {
  temp_dir root;
  put(root, "a", "1.png", png_bytes(4, 4, 1, pattern(4, 4, 1, 0)));
  put(root, "a", "2.png", png_bytes(4, 5, 1, pattern(4, 5, 1, 0)));
  auto data = open(options_for(root));
  gathered bad = gather_all(*data);
  check_fails(bad.result, error_code::shape_mismatch, "2.png: image is 4x5");
}

BOOST_AUTO_TEST_CASE(empty_folders_and_bad_options_are_refused_at_open) {
  temp_dir root;
  put(root, "a", "1.png", png_bytes(2, 2, 1, pattern(2, 2, 1, 0)));
  std::filesystem::create_directories(root.file("b"));
  put(root, "b", "readme.txt", "no images here");
  auto opened = read_image_folder(options_for(root));
  BOOST_REQUIRE(!opened.is_ok());
  check_fails(opened.error(), error_code::invalid_argument, root.file("b") + ": class folder");

  temp_dir empty;
  auto none = read_image_folder(options_for(empty));
  BOOST_REQUIRE(!none.is_ok());
  check_fails(none.error(), error_code::invalid_argument, "no class folders");

  auto options = options_for(root);
  options.path = root.file("missing");
  BOOST_TEST(read_image_folder(options).error().code() == error_code::not_found);
  options = options_for(root);
  options.classes = {"a", "nope"};
  check_fails(read_image_folder(options).error(), error_code::not_found, "'nope'");
  options = options_for(root);
  options.fit = "stretch";
  check_fails(read_image_folder(options).error(), error_code::invalid_argument, "stretch");
  options.fit = "resize";
  options.height = 8;  // width left 0
  check_fails(read_image_folder(options).error(), error_code::invalid_argument, "height 8");
  options.height = 0;
  options.channels = 2;
  check_fails(read_image_folder(options).error(), error_code::invalid_argument, "channels 2");
  // A fixed class list picks and orders the folders.
  options = options_for(root);
  put(root, "b", "1.png", png_bytes(2, 2, 1, pattern(2, 2, 1, 0)));
  options.classes = {"b", "a"};
  auto picked = open(options);
  BOOST_TEST(gather_all(*picked).targets == (std::vector<float>{0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_prefix_and_flipped_byte_fails_cleanly_or_decodes) {
  // Prefixes of a valid file are errors, never a crash or an exit; a
  // flipped byte is caught by PNG's CRCs (JPEG has none: it may decode).
  for (const std::string& whole : {png_bytes(6, 5, 3, pattern(6, 5, 3, 0)),
                                   jpeg_bytes(9, 7, 3, pattern(9, 7, 3, 0))}) {
    const auto* data = reinterpret_cast<const unsigned char*>(whole.data());
    BOOST_REQUIRE(decode_image(data, whole.size(), "whole").is_ok());
    for (size_t n = 0; n < whole.size(); ++n) {
      auto decoded = decode_image(data, n, "prefix");
      BOOST_REQUIRE_MESSAGE(!decoded.is_ok(), "a prefix of " << n << " bytes decoded");
      BOOST_REQUIRE(decoded.error().message().rfind("prefix: ", 0) == 0);
    }
    for (size_t i = 0; i < whole.size(); ++i) {
      std::string flipped = whole;
      flipped[i] = static_cast<char>(flipped[i] ^ 0x55);
      auto decoded = decode_image(reinterpret_cast<const unsigned char*>(flipped.data()),
                                  flipped.size(), "flipped");
      if (!decoded.is_ok())
        BOOST_REQUIRE(decoded.error().code() == error_code::corrupt_data ||
                      decoded.error().code() == error_code::invalid_argument);
    }
  }
}

BOOST_AUTO_TEST_CASE(png_variants_decode_to_8_bit_grey_or_rgb) {
  // 16-bit grey keeps the high byte.
  std::vector<uint16_t> deep = {0, 257 * 10, 257 * 200, 65535};
  auto grey16 = decoded(png_of_format(PNG_FORMAT_LINEAR_Y, 2, 2, deep.data()));
  BOOST_TEST(grey16.channels == 1);
  BOOST_TEST(grey16.pixels == (pixels{0, 10, 200, 255}), boost::test_tools::per_element());
  // Grey + alpha and RGBA drop the alpha, not composite it.
  pixels ga = {10, 0, 20, 128, 30, 255, 40, 7};
  auto grey = decoded(png_of_format(PNG_FORMAT_GA, 2, 2, ga.data()));
  BOOST_TEST(grey.channels == 1);
  BOOST_TEST(grey.pixels == (pixels{10, 20, 30, 40}), boost::test_tools::per_element());
  pixels rgba = {1, 2, 3, 0, 4, 5, 6, 255};
  auto rgb = decoded(png_of_format(PNG_FORMAT_RGBA, 2, 1, rgba.data()));
  BOOST_TEST(rgb.channels == 3);
  BOOST_TEST(rgb.pixels == (pixels{1, 2, 3, 4, 5, 6}), boost::test_tools::per_element());
  // A palette image becomes its colours.
  pixels palette = {255, 0, 0, 0, 0, 255}, indices = {1, 0, 0, 1};
  auto mapped = decoded(png_of_format(PNG_FORMAT_RGB_COLORMAP, 2, 2, indices.data(),
                                      palette.data(), 2));
  BOOST_TEST(mapped.channels == 3);
  BOOST_TEST(mapped.pixels == (pixels{0, 0, 255, 255, 0, 0, 255, 0, 0, 0, 0, 255}),
             boost::test_tools::per_element());
  // A palette with transparency (tRNS, which expanding makes alpha) too.
  pixels clear = {255, 0, 0, 0, 0, 0, 255, 255};
  auto see_through = decoded(png_of_format(PNG_FORMAT_RGBA_COLORMAP, 2, 2, indices.data(),
                                           clear.data(), 2));
  BOOST_TEST(see_through.channels == 3);
  BOOST_TEST(see_through.pixels == mapped.pixels, boost::test_tools::per_element());
}

// The process's peak resident memory in MiB.
long peak_mib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

// Found by fuzz/image_decode (a timeout): a 25-byte JPEG claiming 8132 x
// 31240 pixels had its 254 MB buffer zero-filled before the first scanline
// failed; a PNG of 60 bytes, 768 MB. The buffer now grows with the rows.
BOOST_AUTO_TEST_CASE(a_file_cut_short_does_not_pay_for_the_size_its_header_claims) {
  const unsigned char jpeg[] = {0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x1f, 0xc4,
                                0x7a, 0x08, 0x01, 0x01, 0x11, 0x0b, 0xff, 0xda, 0x00,
                                0x08, 0x01, 0x01, 0x00, 0x3f, 0x00, 0xdb};
  // A PNG signature, an IHDR of 16000 x 16000 8-bit RGB, an IDAT cut short.
  std::string png("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", 16);
  const std::string ihdr = std::string("IHDR") + std::string("\x00\x00\x3e\x80", 4) +
                           std::string("\x00\x00\x3e\x80", 4) + std::string("\x08\x02\x00\x00\x00", 5);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()), static_cast<uInt>(ihdr.size())));
  png += ihdr.substr(4);
  for (int i = 3; i >= 0; --i)
    png += static_cast<char>((crc >> (8 * i)) & 0xff);
  png += std::string("\x00\x00\x00\x10IDAT\x78\x9c", 10);  // an IDAT of 16 bytes, cut at 2
  const long before = peak_mib();
  auto a = decode_image(jpeg, sizeof jpeg, "claims.jpg");
  BOOST_TEST(a.error().code() == error_code::corrupt_data);
  auto b = decode_image(reinterpret_cast<const unsigned char*>(png.data()), png.size(), "claims.png");
  BOOST_TEST(b.error().code() == error_code::corrupt_data);
  BOOST_TEST(b.error().message().find("claims.png") != std::string::npos, b.error().message());
  BOOST_TEST(peak_mib() - before < 64, "peak grew by " << peak_mib() - before << " MiB");
}

BOOST_AUTO_TEST_CASE(concurrent_gather_from_four_threads_matches_one_thread) {
  temp_dir root;
  for (int i = 0; i < 48; ++i) {
    std::string name = std::to_string(100 + i);
    if (i % 2 == 0)
      put(root, "c" + std::to_string(i % 3), name + ".png",
          png_bytes(12 + i % 5, 10, 3, pattern(12 + i % 5, 10, 3, i)));
    else
      put(root, "c" + std::to_string(i % 3), name + ".jpg",
          jpeg_bytes(12, 10 + i % 4, 3, pattern(12, 10 + i % 4, 3, i)));
  }
  auto options = options_for(root);
  options.height = 8;
  options.width = 8;
  auto data = open(options);
  const gathered once = gather_all(*data);
  BOOST_REQUIRE_MESSAGE(once.result.is_ok(), once.result.to_string());
  std::vector<gathered> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        results[static_cast<size_t>(t)] = gather_all(*data);
    });
  for (auto& thread : threads)
    thread.join();
  for (const gathered& r : results) {
    BOOST_REQUIRE_MESSAGE(r.result.is_ok(), r.result.to_string());
    BOOST_REQUIRE(std::memcmp(r.features.data(), once.features.data(),
                              once.features.size() * sizeof(float)) == 0);
    BOOST_TEST(r.targets == once.targets, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_SUITE_END()
