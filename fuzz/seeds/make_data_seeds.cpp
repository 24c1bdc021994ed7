// The seeds of the file readers' harnesses (csv_table, npy_file,
// image_decode, shard_index), written by make_seeds into DIR/<harness>/:
// small valid inputs, each after the option byte(s) its harness reads
// first. Images are written with libpng and libjpeg, record shards with
// dtrain's own write_shards; .npy and .npz bytes are laid out here as
// numpy writes them (savez stores members, savez_compressed deflates).
#include <png.h>
#include <zlib.h>

#include <cstdio>  // before jpeglib.h, which needs FILE
#include <jpeglib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "dtrain/data/dataset.hpp"
#include "dtrain/datasets/shards.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "make_seeds: %s\n", what.c_str());
  std::exit(1);
}

void put(const std::string& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void csv_seeds(const std::string& dir) {
  // bit 0 header, 1 classification, 2 first column categorical, 3 missing
  // "mean", 4 tab-separated, 5 the second column is the target.
  put(dir, "header_labels", std::string("\x03") + "a,b,label\n1,2.5,cat\n3,-4e2,dog\n0,1,cat\n");
  put(dir, "no_header_regression", std::string("\x00", 1) + "1,2,3.5\r\n4,5,6\r\n");
  put(dir, "categorical_quoted", std::string("\x07") +
                                     "\xEF\xBB\xBF" "color,\"size, cm\",y\nred,1,0\n\"blue\",2,1\n"
                                     "red,\"3\",2\n");
  put(dir, "missing_mean_tsv", std::string("\x1b") + "x\tz\ty\n1\tNA\t0\n\t2\t1\n3\t?\t1\n");
  put(dir, "second_column_target", std::string("\x20") + "1,0.5,2\n3,1.5,4\n");
}

std::string u16le(size_t v) { return {static_cast<char>(v & 0xff), static_cast<char>(v >> 8)}; }
std::string u32le(uint32_t v) { return u16le(v & 0xffff) + u16le(v >> 16); }

// An .npy of version 1: the header padded with spaces to a multiple of 64.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape +
                       ", }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + u16le(header.size()) + header + data;
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A zip archive of the members, stored (method 0) or raw-deflated (8).
std::string zip(const std::vector<std::pair<std::string, std::string>>& members, bool deflated) {
  std::string out, central;
  for (const auto& [name, data] : members) {
    std::string body = data;
    if (deflated) {
      z_stream z{};
      if (deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        fail("deflateInit2");
      body.assign(deflateBound(&z, data.size()), '\0');
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = reinterpret_cast<Bytef*>(body.data());
      z.avail_out = static_cast<uInt>(body.size());
      if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        fail("deflate");
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    const std::string fields = u16le(20) + u16le(0) + u16le(deflated ? 8 : 0) + u16le(0) +
                               u16le(0x21) + u32le(crc) + u32le(static_cast<uint32_t>(body.size())) +
                               u32le(static_cast<uint32_t>(data.size())) + u16le(name.size()) +
                               u16le(0);
    const uint32_t offset = static_cast<uint32_t>(out.size());
    out += "PK\x03\x04" + fields + name + body;
    central += "PK\x01\x02" + u16le(20) + fields + u16le(0) + u16le(0) + u16le(0) + u32le(0) +
               u32le(offset) + name;
  }
  const uint32_t at = static_cast<uint32_t>(out.size());
  out += central + "PK\x05\x06" + u16le(0) + u16le(0) + u16le(members.size()) +
         u16le(members.size()) + u32le(static_cast<uint32_t>(central.size())) + u32le(at) +
         u16le(0);
  return out;
}

void npy_seeds(const std::string& dir) {
  // bit 0 classification, bit 1 (.npz) targets from array "y".
  const std::string x = npy("<f4", "(3, 2)", bytes_of(std::vector<float>{0, 1.5f, -2, 3, 4, 5}));
  const std::string y = npy("|u1", "(3,)", bytes_of(std::vector<uint8_t>{0, 2, 1}));
  const std::string none(1, '\0');
  put(dir, "f4_rows", none + x);
  put(dir, "u1_labels", "\x01" + y);
  put(dir, "f8_images", none + npy("<f8", "(2, 1, 2, 2)",
                                     bytes_of(std::vector<double>{0, .25, .5, 1, 1, 0, 2, 3})));
  put(dir, "i8_values", none + npy("<i8", "(2,)", bytes_of(std::vector<int64_t>{-7, 1LL << 40})));
  put(dir, "f2_specials", "\x01" + npy("<f2", "(2, 2)", bytes_of(std::vector<uint16_t>{0x3c00, 0xc000,
                                                                                 0x7c00, 0x0001})));
  put(dir, "bool", "\x01" + npy("|b1", "(3,)", std::string("\x01\x00\x01", 3)));
  put(dir, "npz_stored", "\x03" + zip({{"x.npy", x}, {"y.npy", y}}, false));
  put(dir, "npz_deflated", "\x03" + zip({{"x.npy", x}, {"y.npy", y}}, true));
}

// HWC 8-bit pixels of a small gradient.
std::vector<uint8_t> gradient(int width, int height, int channels) {
  std::vector<uint8_t> px(static_cast<size_t>(width * height * channels));
  for (size_t i = 0; i < px.size(); ++i)
    px[i] = static_cast<uint8_t>(i * 37);
  return px;
}

std::string png(int width, int height, int channels) {
  const std::vector<uint8_t> px = gradient(width, height, channels);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB
                                                                 : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, px.data(), 0, nullptr))
    fail("png_image_write_to_memory");
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, px.data(), 0, nullptr))
    fail("png_image_write_to_memory");
  out.resize(size);
  return out;
}

std::string jpeg(int width, int height, int channels, bool progressive) {
  const std::vector<uint8_t> px = gradient(width, height, channels);
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
  jpeg_set_quality(&cinfo, 75, TRUE);
  if (progressive)
    jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPROW>(px.data() + cinfo.next_scanline * width * channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return out;
}

void image_seeds(const std::string& dir) {
  put(dir, "grey.png", png(5, 3, 1));
  put(dir, "rgb.png", png(4, 4, 3));
  put(dir, "rgba.png", png(3, 2, 4));
  put(dir, "grey.jpg", jpeg(8, 8, 1, false));
  put(dir, "rgb.jpg", jpeg(9, 7, 3, false));
  put(dir, "progressive.jpg", jpeg(16, 8, 3, true));
}

// A set written by write_shards, framed as the harness reads it: the
// index's length (with 0x8000, "fix shard 0's size and CRC"), the index,
// shard 0.
void shard_seed(const std::string& dir, const std::string& name, const std::string& encoding) {
  using dtrain::tensor;
  tensor x = tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 2, 2});
  tensor y = tensor::from_vector({1, 0, 1}, {3});
  auto set = dtrain::data::tensor_dataset::create(std::move(x), std::move(y), "seed");
  if (!set)
    fail(set.error().to_string());
  fs::create_directories(dir);
  const std::string tmp = dir + "/tmp-" + name;
  fs::remove_all(tmp);
  dtrain::data::shard_write_options o;
  o.dir = tmp;
  o.encoding = encoding;
  if (auto s = dtrain::data::write_shards(**set, o); !s)
    fail(s.to_string());
  const std::string index = read_all(tmp + "/index.bin");
  const std::string header = u16le(index.size() | 0x8000);
  put(dir, name, header + index + read_all(tmp + "/shard-00000.bin"));
  fs::remove_all(tmp);
}

} // namespace

/// Called by make_seeds' main.
void data_seeds(const std::string& out) {
  csv_seeds(out + "/csv_table");
  npy_seeds(out + "/npy_file");
  image_seeds(out + "/image_decode");
  shard_seed(out + "/shard_index", "raw", "raw");
  shard_seed(out + "/shard_index", "deflate", "deflate");
}
