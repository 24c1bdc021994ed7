#include "dtrain/datasets/image_decode.hpp"

// libpng and libjpeg report a fatal error by calling a handler that must not
// return; ours longjmp back to a setjmp. The functions holding a setjmp
// (the *_phase functions below) keep no C++ object with a destructor in
// their frame and write their results through a pointer, so the jump skips
// only libpng's and libjpeg's C frames and leaves no local indeterminate.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <utility>

#include <jpeglib.h>
#include <jerror.h>  // the JWRN_ codes
#include <png.h>

#include "dtrain/core/check.hpp"

namespace dtrain::data {

namespace {

constexpr int64_t max_side = 65535;
constexpr int64_t max_pixels = int64_t{1} << 28;

status check_size(int64_t height, int64_t width, const std::string& what) {
  if (height <= 0 || width <= 0 || height > max_side || width > max_side ||
      height * width > max_pixels)
    return invalid_argument(what + ": an image of " + std::to_string(width) + "x" +
                            std::to_string(height) + " pixels is beyond what dtrain decodes (" +
                            std::to_string(max_side) + " on a side, 2^28 pixels)");
  return status::ok();
}

// ---- PNG ----

/// One libpng read: its structs, the memory it reads from, and what a
/// phase leaves behind (the header's numbers or the error's text).
struct png_job {
  const unsigned char* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  png_structp png = nullptr;
  png_infop info = nullptr;
  char message[256] = {};
  int64_t width = 0;
  int64_t height = 0;
  int64_t channels = 0;
};

void png_on_error(png_structp png, png_const_charp text) {
  auto* job = static_cast<png_job*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof job->message, "%s", text);
  png_longjmp(png, 1);
}

// Warnings are about ancillary chunks (a bad iCCP profile, a text chunk's
// CRC) that do not change the pixels: ignored.
void png_on_warning(png_structp, png_const_charp) {}

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* job = static_cast<png_job*>(png_get_io_ptr(png));
  if (job->size - job->pos < n)
    png_error(png, "the file is cut short");
  std::memcpy(out, job->data + job->pos, n);
  job->pos += n;
}

// Reads the header chunks and sets up the conversion to 8-bit grey or RGB.
bool png_header_phase(png_job* job) {
  if (setjmp(png_jmpbuf(job->png)))
    return false;
  png_set_read_fn(job->png, job, png_read_memory);
  png_read_info(job->png, job->info);
  int color = png_get_color_type(job->png, job->info);
  if (png_get_bit_depth(job->png, job->info) == 16)
    png_set_strip_16(job->png);
  if (color == PNG_COLOR_TYPE_PALETTE)
    png_set_palette_to_rgb(job->png);
  if (color == PNG_COLOR_TYPE_GRAY)
    png_set_expand_gray_1_2_4_to_8(job->png);
  // Expanding a palette also turns tRNS into alpha; strip it in every case.
  if ((color & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(job->png, job->info, PNG_INFO_tRNS))
    png_set_strip_alpha(job->png);
  png_set_interlace_handling(job->png);
  png_read_update_info(job->png, job->info);
  job->width = png_get_image_width(job->png, job->info);
  job->height = png_get_image_height(job->png, job->info);
  job->channels = png_get_channels(job->png, job->info);
  return true;
}

// `rows` (an interlaced image, whose passes need every row at once) point
// into `pixels`; else `pixels` grows row by row, so that a file cut short
// costs the rows it holds, not the size its header claims.
bool png_pixels_phase(png_job* job, std::vector<uint8_t>* pixels, png_bytepp rows,
                      size_t stride, int64_t height) {
  if (setjmp(png_jmpbuf(job->png)))
    return false;
  if (rows != nullptr) {
    png_read_image(job->png, rows);
  } else {
    for (int64_t y = 0; y < height; ++y) {
      pixels->resize(static_cast<size_t>(y + 1) * stride);
      png_read_row(job->png, pixels->data() + static_cast<size_t>(y) * stride, nullptr);
    }
  }
  // Reads up to IEND, so a file cut after its last IDAT is caught too.
  png_read_end(job->png, nullptr);
  return true;
}

/// Owns a png_job's libpng structs.
class png_reader {
public:
  png_reader(const unsigned char* data, size_t size) {
    job_.data = data;
    job_.size = size;
  }
  ~png_reader() {
    if (job_.png != nullptr)
      png_destroy_read_struct(&job_.png, job_.info != nullptr ? &job_.info : nullptr, nullptr);
  }
  png_reader(const png_reader&) = delete;
  png_reader& operator=(const png_reader&) = delete;

  result<image_header> header(const std::string& what) {
    job_.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job_, png_on_error,
                                      png_on_warning);
    if (job_.png != nullptr)
      job_.info = png_create_info_struct(job_.png);
    if (job_.png == nullptr || job_.info == nullptr)
      return resource_exhausted(what + ": libpng could not allocate its decoder");
    if (!png_header_phase(&job_))
      return corrupt_data(what + ": bad PNG: " + job_.message);
    if (job_.channels != 1 && job_.channels != 3)
      return corrupt_data(what + ": bad PNG: " + std::to_string(job_.channels) +
                          " channels after conversion (expected 1 or 3)");
    DTRAIN_RETURN_IF_ERROR(check_size(job_.height, job_.width, what));
    return image_header{job_.height, job_.width, job_.channels};
  }

  status pixels(image& out, const std::string& what) {
    const auto stride = static_cast<size_t>(out.width * out.channels);
    out.pixels.clear();
    out.pixels.reserve(stride * static_cast<size_t>(out.height));  // not yet touched
    std::vector<png_bytep> rows;
    if (png_get_interlace_type(job_.png, job_.info) != PNG_INTERLACE_NONE) {
      out.pixels.resize(stride * static_cast<size_t>(out.height));
      rows.resize(static_cast<size_t>(out.height));
      for (int64_t y = 0; y < out.height; ++y)
        rows[static_cast<size_t>(y)] = out.pixels.data() + static_cast<size_t>(y) * stride;
    }
    if (!png_pixels_phase(&job_, &out.pixels, rows.empty() ? nullptr : rows.data(), stride,
                          out.height))
      return corrupt_data(what + ": bad PNG: " + job_.message);
    return status::ok();
  }

private:
  png_job job_;
};

// ---- JPEG ----

/// One libjpeg read; `cinfo.client_data` points back here for the handlers.
struct jpeg_job {
  jpeg_decompress_struct cinfo {};
  jpeg_error_mgr errors {};
  std::jmp_buf jump {};
  bool created = false;
  bool unsupported = false;  // a colour space we refuse (not corrupt data)
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jpeg_on_error(j_common_ptr cinfo) {
  auto* job = static_cast<jpeg_job*>(cinfo->client_data);
  cinfo->err->format_message(cinfo, job->message);
  std::longjmp(job->jump, 1);
}

// libjpeg reports damage it can paper over (grey fill) as a warning, level
// -1; positive levels are traces. Damage is an error here, except stray
// bytes before a marker and an unknown JFIF revision, which lose no pixels.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level >= 0)
    return;
  int code = cinfo->err->msg_code;
  if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR)
    return;
  jpeg_on_error(cinfo);
}

bool jpeg_header_phase(jpeg_job* job, const unsigned char* data, size_t size) {
  if (setjmp(job->jump))
    return false;
  jpeg_create_decompress(&job->cinfo);  // keeps err and client_data
  job->created = true;
  jpeg_mem_src(&job->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&job->cinfo, TRUE);
  switch (job->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: job->cinfo.out_color_space = JCS_GRAYSCALE; break;
    case JCS_YCbCr:
    case JCS_RGB: job->cinfo.out_color_space = JCS_RGB; break;
    default:
      job->unsupported = true;
      std::snprintf(job->message, sizeof job->message,
                    "colour space %d (CMYK or YCCK) is not supported, only grey and RGB",
                    static_cast<int>(job->cinfo.jpeg_color_space));
      return false;
  }
  jpeg_calc_output_dimensions(&job->cinfo);
  return true;
}

// `pixels` grows row by row (its capacity reserved), so that damaged data
// costs the rows decoded before it, not the size the header claims.
bool jpeg_pixels_phase(jpeg_job* job, std::vector<uint8_t>* pixels) {
  if (setjmp(job->jump))
    return false;
  jpeg_decompress_struct* cinfo = &job->cinfo;
  jpeg_start_decompress(cinfo);
  size_t stride = static_cast<size_t>(cinfo->output_width) *
                  static_cast<size_t>(cinfo->output_components);
  while (cinfo->output_scanline < cinfo->output_height) {
    const size_t at = static_cast<size_t>(cinfo->output_scanline) * stride;
    pixels->resize(at + stride);
    JSAMPROW row = pixels->data() + at;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

/// Owns a jpeg_job's decompressor.
class jpeg_reader {
public:
  jpeg_reader(const unsigned char* data, size_t size) : data_(data), size_(size) {
    job_.cinfo.err = jpeg_std_error(&job_.errors);
    job_.errors.error_exit = jpeg_on_error;
    job_.errors.emit_message = jpeg_on_message;
    job_.cinfo.client_data = &job_;
  }
  ~jpeg_reader() {
    if (job_.created)
      jpeg_destroy_decompress(&job_.cinfo);
  }
  jpeg_reader(const jpeg_reader&) = delete;
  jpeg_reader& operator=(const jpeg_reader&) = delete;

  result<image_header> header(const std::string& what) {
    if (!jpeg_header_phase(&job_, data_, size_)) {
      std::string why = what + ": bad JPEG: " + job_.message;
      return job_.unsupported ? invalid_argument(why) : corrupt_data(why);
    }
    auto height = static_cast<int64_t>(job_.cinfo.output_height);
    auto width = static_cast<int64_t>(job_.cinfo.output_width);
    DTRAIN_RETURN_IF_ERROR(check_size(height, width, what));
    return image_header{height, width, job_.cinfo.out_color_space == JCS_GRAYSCALE ? 1 : 3};
  }

  status pixels(image& out, const std::string& what) {
    out.pixels.clear();
    out.pixels.reserve(static_cast<size_t>(out.height * out.width * out.channels));
    if (!jpeg_pixels_phase(&job_, &out.pixels))
      return corrupt_data(what + ": bad JPEG: " + job_.message);
    if (job_.cinfo.output_components != out.channels)
      return corrupt_data(what + ": bad JPEG: decoded " +
                          std::to_string(job_.cinfo.output_components) +
                          " components, the header promised " + std::to_string(out.channels));
    return status::ok();
  }

private:
  const unsigned char* data_;
  size_t size_;
  jpeg_job job_;
};

status unknown_format(const unsigned char* data, size_t size, const std::string& what) {
  std::string start;
  for (size_t i = 0; i < size && i < 4; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(data[i]));
    start += (i == 0 ? "" : " ") + std::string(hex);
  }
  return corrupt_data(what + ": not a PNG or JPEG image (" +
                      (size == 0 ? std::string("empty") : "starts with bytes " + start) + ")");
}

template <class Reader>
result<image> decode_with(const unsigned char* data, size_t size, const std::string& what) {
  Reader reader(data, size);
  DTRAIN_ASSIGN_OR_RETURN(image_header header, reader.header(what));
  image out;
  out.height = header.height;
  out.width = header.width;
  out.channels = header.channels;
  DTRAIN_RETURN_IF_ERROR(reader.pixels(out, what));
  return out;
}

} // namespace

image_format sniff_image_format(const unsigned char* data, size_t size) {
  static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, png_signature, 8) == 0)
    return image_format::png;
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff)
    return image_format::jpeg;
  return image_format::unknown;
}

result<image_header> read_image_header(const unsigned char* data, size_t size,
                                       const std::string& what) {
  switch (sniff_image_format(data, size)) {
    case image_format::png: return png_reader(data, size).header(what);
    case image_format::jpeg: return jpeg_reader(data, size).header(what);
    case image_format::unknown: break;
  }
  return unknown_format(data, size, what);
}

result<image> decode_image(const unsigned char* data, size_t size, const std::string& what) {
  switch (sniff_image_format(data, size)) {
    case image_format::png: return decode_with<png_reader>(data, size, what);
    case image_format::jpeg: return decode_with<jpeg_reader>(data, size, what);
    case image_format::unknown: break;
  }
  return unknown_format(data, size, what);
}

} // namespace dtrain::data
