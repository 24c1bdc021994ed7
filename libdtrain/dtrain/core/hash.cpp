#include "dtrain/core/hash.hpp"

namespace dtrain::hash {

std::string hex16(uint64_t h) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<size_t>(i)] = digits[h & 15];
  return out;
}

} // namespace dtrain::hash
