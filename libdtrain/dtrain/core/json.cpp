#include "dtrain/core/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace dtrain::json {

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_string(out, s);
  return out;
}

std::string number(double d) {
  if (std::isnan(d))
    return "NaN";
  if (std::isinf(d))
    return d > 0 ? "Infinity" : "-Infinity";
  // to_chars without a precision gives the shortest round trip; 32 bytes
  // hold the longest ("-2.2250738585072014e-308").
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, d);
  std::string out(text, end);
  if (out.find_first_of(".e") == std::string::npos)
    out += ".0";
  return out;
}

} // namespace dtrain::json
