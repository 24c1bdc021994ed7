#include "dtrain/dashboard/http.hpp"

namespace dtrain::dashboard {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string decode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

} // namespace

std::string parsed_target::get(const std::string& key, bool* found) const {
  for (const auto& [k, v] : query)
    if (k == key) {
      if (found)
        *found = true;
      return v;
    }
  if (found)
    *found = false;
  return "";
}

parsed_target parse_target(const std::string& target) {
  parsed_target t;
  const size_t q = target.find('?');
  t.path = target.substr(0, q);  // the routes are ASCII: no decoding
  if (q == std::string::npos)
    return t;
  const std::string query = target.substr(q + 1);
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos)
      end = query.size();
    const std::string part = query.substr(start, end - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      t.query.emplace_back(decode(part.substr(0, eq)),
                           eq == std::string::npos ? "" : decode(part.substr(eq + 1)));
    }
    start = end + 1;
  }
  return t;
}

} // namespace dtrain::dashboard
