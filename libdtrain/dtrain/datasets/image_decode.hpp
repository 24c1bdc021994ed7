#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::data {

/// The file formats decode_image reads, told apart by their first bytes
/// (never by a file name).
enum class image_format { unknown, png, jpeg };

/// The format whose signature `data` starts with: PNG's 8-byte signature,
/// or JPEG's FF D8 FF. Anything else (including fewer bytes) is unknown.
image_format sniff_image_format(const unsigned char* data, size_t size);

/// An image's size and channel count as decode_image will return it.
struct image_header {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;  // 1 (grey) or 3 (RGB)
};

/// One decoded 8-bit image: `pixels` holds height rows of width pixels of
/// `channels` interleaved bytes each (HWC, row-major; RGB order for 3).
struct image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;  // 1 (grey) or 3 (RGB)
  std::vector<uint8_t> pixels;
};

/// Reads only the header of the PNG or JPEG in `data` (the format sniffed
/// from its first bytes). What the decoder turns into what:
///  - PNG: grey (any bit depth, with or without alpha) -> 1 channel; RGB,
///    RGBA and palette images -> 3. 16-bit samples keep their high byte;
///    alpha and tRNS transparency are dropped, not composited.
///  - JPEG: 1-component -> 1 channel; YCbCr / RGB -> 3. CMYK and YCCK
///    JPEGs are refused (invalid_argument).
/// `what` names the source (a file path) and starts every error message.
/// Errors: corrupt_data for an unknown signature, a header cut short or
/// malformed (the decoder's reason quoted); invalid_argument for a size
/// beyond 65535 on a side or 2^28 pixels. Never aborts or exits: libpng's
/// and libjpeg's fatal errors are turned into this status (setjmp/longjmp
/// inside the decoder, across C frames only). Thread-safe: every call owns
/// its decoder state.
result<image_header> read_image_header(const unsigned char* data, size_t size,
                                       const std::string& what);

/// Decodes the whole PNG or JPEG in `data`, as read_image_header describes.
/// A file cut short, a bad CRC in a critical PNG chunk, a bad zlib stream or
/// Huffman code -- corrupt_data naming `what` and the decoder's reason.
/// libjpeg's "corrupt data" warnings, which it would otherwise paper over
/// by filling the rest of the image with grey (a premature end of file, a
/// bad Huffman code, a lost restart marker), are errors here too; only
/// harmless ones (stray bytes before a marker, an unknown JFIF revision)
/// are let through. Thread-safe like read_image_header.
result<image> decode_image(const unsigned char* data, size_t size, const std::string& what);

} // namespace dtrain::data
