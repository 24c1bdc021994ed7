// The image decoder (datasets/image_decode.hpp): read_image_header and
// decode_image on the input as PNG or JPEG bytes (the decoder sniffs
// which); what decodes must agree with its header.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dtrain/datasets/image_decode.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)dtrain::data::sniff_image_format(data, size);
  auto header = dtrain::data::read_image_header(data, size, "fuzz image");
  auto decoded = dtrain::data::decode_image(data, size, "fuzz image");
  dtrain::fuzz::show(decoded ? std::to_string(decoded->height) + " x " +
                                 std::to_string(decoded->width) + " x " +
                                 std::to_string(decoded->channels)
                           : decoded.error().to_string());
  if (!decoded)
    return 0;
  const auto& im = *decoded;
  if (im.pixels.size() != static_cast<size_t>(im.height * im.width * im.channels)) {
    std::fprintf(stderr, "decode_image: %zu pixel bytes for %lld x %lld x %lld\n",
                 im.pixels.size(), static_cast<long long>(im.height),
                 static_cast<long long>(im.width), static_cast<long long>(im.channels));
    std::abort();
  }
  if (!header || header->height != im.height || header->width != im.width ||
      header->channels != im.channels) {
    std::fprintf(stderr, "decode_image decoded what read_image_header %s\n",
                 header ? "reads with another size" : "refuses");
    std::abort();
  }
  return 0;
}
