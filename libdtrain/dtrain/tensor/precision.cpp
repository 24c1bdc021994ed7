#include "dtrain/tensor/precision.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dtrain {

namespace {

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Keeps the top `kept` of float32's 23 mantissa bits, rounding to nearest
// with ties to even. A carry out of the mantissa bumps the exponent, which
// is exactly right, up to the largest exponent, where it gives infinity.
float round_mantissa(float x, int kept) {
  if (std::isnan(x))
    return x;
  const int dropped = 23 - kept;
  uint32_t b = bits_of(x);
  const uint32_t lsb = (b >> dropped) & 1u;
  b += ((1u << (dropped - 1)) - 1u) + lsb;
  b &= ~((1u << dropped) - 1u);
  return float_of(b);
}

float round_half(float x) {
  if (std::isnan(x) || std::isinf(x))
    return x;
  const float a = std::fabs(x);
  // 65520 is halfway between 65504 (the largest half) and 65536 (one ulp
  // more, out of range): ties to even round it up, to infinity.
  if (a >= 65520.0f)
    return std::copysign(INFINITY, x);
  if (a < 0x1p-14f) {
    // Half's subnormals are the multiples of 2^-24; scaling by 2^24 is exact
    // and nearbyint rounds ties to even in the default rounding mode.
    return std::copysign(std::nearbyint(a * 0x1p24f) * 0x1p-24f, x);
  }
  return round_mantissa(x, 10);
}

} // namespace

const char* to_string(precision p) {
  switch (p) {
  case precision::fp32: return "fp32";
  case precision::tf32: return "tf32";
  case precision::bf16: return "bf16";
  case precision::fp16: return "fp16";
  }
  return "?";
}

result<precision> parse_precision(const std::string& text) {
  for (precision p : {precision::fp32, precision::tf32, precision::bf16, precision::fp16})
    if (text == to_string(p))
      return p;
  return invalid_argument("unknown precision '" + text + "' (choose fp32, tf32, bf16 or fp16)");
}

float round_to(precision p, float x) {
  switch (p) {
  case precision::fp32: return x;
  case precision::tf32: return round_mantissa(x, 10);
  case precision::bf16: return round_mantissa(x, 7);
  case precision::fp16: return round_half(x);
  }
  return x;
}

} // namespace dtrain
