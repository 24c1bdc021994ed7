#pragma once

#include <png.h>

#include <cstdint>
#include <string>

/// PNG files for the tests that read image folders, written with libpng's
/// simplified API (tests link PNG::PNG).
namespace dtrain::testing {

/// A PNG of `height` x `width` 8-bit pixels in HWC order, 1 (grey) or 3
/// (RGB) channels; "" when libpng refuses (the caller checks).
inline std::string png_bytes(int width, int height, int channels, const uint8_t* px) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, px, 0, nullptr))
    return "";
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, px, 0, nullptr))
    return "";
  out.resize(size);
  return out;
}

} // namespace dtrain::testing
