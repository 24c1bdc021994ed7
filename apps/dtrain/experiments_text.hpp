#pragma once

// Text the `dtrain experiments` actions share (experiments_command.cpp,
// experiments_compare.cpp): numbers, times and JSON values as they print,
// and tables.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "dtrain/core/json.hpp"

namespace dtrain::cli {

inline std::string json_string(const std::string& s) { return json::quoted(s); }

// Strict JSON for scripts (jq, Python, Boost's parser): NaN and the
// infinities are null here (the store itself keeps them as they were).
inline std::string json_number(double x) {
  if (!std::isfinite(x))
    return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Hyperparameters are stored as JSON (tune::to_json): inline them as they are.
inline std::string json_raw_or_string(const std::string& s) {
  return !s.empty() && (s[0] == '{' || s[0] == '[') ? s : json_string(s);
}

inline std::string number_text(double x) {
  if (std::isnan(x))
    return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

inline std::string time_text(double unix_seconds) {
  if (unix_seconds <= 0)
    return "-";
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

inline std::string shortened(const std::string& s, size_t limit) {
  std::string one_line = s;
  for (char& c : one_line)
    if (c == '\n' || c == '\t')
      c = ' ';
  return one_line.size() <= limit ? one_line : one_line.substr(0, limit - 3) + "...";
}

// Rows under a header, each column as wide as its widest cell.
inline void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i)
    width[i] = header[i].size();
  for (auto& r : rows)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (i + 1 < cells.size())
        out += std::string(width[i] - cells[i].size() + 2, ' ');
    }
    std::printf("%s\n", out.c_str());
  };
  line(header);
  for (auto& r : rows)
    line(r);
}

} // namespace dtrain::cli
