#include "dtrain/core/utf8.hpp"

namespace dtrain::utf8 {

namespace {

// The sequence a lead byte starts: its length (0: not a lead byte) and the
// range of its second byte (table 3-7; later ones are 0x80..0xBF).
struct lead {
  size_t length;
  unsigned char low, high;
};

lead lead_of(unsigned char b) {
  if (b < 0x80)
    return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF)
    return {2, 0x80, 0xBF};
  if (b == 0xE0)
    return {3, 0xA0, 0xBF};  // no overlong 3-byte forms
  if (b == 0xED)
    return {3, 0x80, 0x9F};  // no surrogates
  if (b >= 0xE1 && b <= 0xEF)
    return {3, 0x80, 0xBF};
  if (b == 0xF0)
    return {4, 0x90, 0xBF};  // no overlong 4-byte forms
  if (b >= 0xF1 && b <= 0xF3)
    return {4, 0x80, 0xBF};
  if (b == 0xF4)
    return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

// How many bytes of the sequence `l` starting at s[i] are there and valid
// (at least the lead byte itself; l.length when it is whole).
size_t valid_bytes(std::string_view s, size_t i, const lead& l) {
  size_t n = 1;
  while (n < l.length && i + n < s.size()) {
    const auto c = static_cast<unsigned char>(s[i + n]);
    const unsigned char low = n == 1 ? l.low : 0x80;
    const unsigned char high = n == 1 ? l.high : 0xBF;
    if (c < low || c > high)
      break;
    ++n;
  }
  return n;
}

} // namespace

size_t complete_prefix_length(std::string_view s) {
  // A cut sequence has at most 3 of its 4 bytes: its lead is among the last 3.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xC0) == 0x80)
      continue;  // a continuation byte: the lead is further back
    const lead l = lead_of(b);
    return l.length > back && valid_bytes(s, i, l) == back ? i : s.size();
  }
  return s.size();
}

std::string replace_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const lead l = lead_of(static_cast<unsigned char>(s[i]));
    if (l.length == 0) {
      out += replacement;
      ++i;
      continue;
    }
    const size_t n = valid_bytes(s, i, l);
    if (n == l.length)
      out.append(s.substr(i, n));
    else
      out += replacement;
    i += n;
  }
  return out;
}

} // namespace dtrain::utf8
