#include "dtrain/train/hyperparameters.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace dtrain::train {

namespace {

status bad_value(const std::string& key, const std::string& value, const char* expected) {
  return invalid_argument("hyperparameter '" + key + "': '" + value + "' is not " + expected);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

} // namespace

result<std::string> hyperparameters::get_string(const std::string& key,
                                                const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

namespace {

// Parses the whole (trimmed) value with `parse` (strtoll/strtod-like).
template <class T, class Parse>
result<T> parse_number(const std::map<std::string, std::string>& values, const std::string& key,
                       T fallback, const char* expected, Parse parse) {
  auto it = values.find(key);
  if (it == values.end())
    return fallback;
  std::string v = trim(it->second);
  char* end = nullptr;
  errno = 0;
  auto x = parse(v.c_str(), &end);
  if (v.empty() || *end != 0 || errno != 0)
    return bad_value(key, it->second, expected);
  return static_cast<T>(x);
}

} // namespace

result<int64_t> hyperparameters::get_int(const std::string& key, int64_t fallback) const {
  return parse_number<int64_t>(values_, key, fallback, "an integer",
                               [](const char* s, char** end) { return std::strtoll(s, end, 10); });
}

result<double> hyperparameters::get_double(const std::string& key, double fallback) const {
  return parse_number<double>(values_, key, fallback, "a number",
                              [](const char* s, char** end) { return std::strtod(s, end); });
}

result<bool> hyperparameters::get_bool(const std::string& key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end())
    return fallback;
  std::string v = trim(it->second);
  if (v == "true" || v == "1" || v == "yes")
    return true;
  if (v == "false" || v == "0" || v == "no")
    return false;
  return bad_value(key, it->second, "a boolean (true/false)");
}

result<std::vector<int64_t>> hyperparameters::get_int_list(const std::string& key,
                                                           std::vector<int64_t> fallback) const {
  auto it = values_.find(key);
  if (it == values_.end())
    return fallback;
  std::string v = trim(it->second);
  if (!v.empty() && v.front() == '[' && v.back() == ']')
    v = v.substr(1, v.size() - 2);
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string item = trim(v.substr(start, comma == std::string::npos ? std::string::npos
                                                                       : comma - start));
    if (!item.empty() || comma != std::string::npos) {
      char* end = nullptr;
      long long x = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != 0)
        return bad_value(key, it->second, "a list of integers");
      out.push_back(x);
    }
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

status hyperparameters::check_known(const std::vector<std::string>& known,
                                    const std::string& owner) const {
  // "data.*" in `known` stands for every key that begins "data.".
  auto matches = [](const std::string& key, const std::string& pattern) {
    if (pattern.size() > 1 && pattern.compare(pattern.size() - 2, 2, ".*") == 0)
      return key.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
    return key == pattern;
  };
  for (auto& [key, value] : values_) {
    if (std::any_of(known.begin(), known.end(),
                    [&, &key = key](const std::string& k) { return matches(key, k); }))
      continue;
    std::string list;
    for (auto& k : known)
      list += (list.empty() ? "" : ", ") + k;
    return invalid_argument(owner + ": unknown hyperparameter '" + key + "' (known: " + list + ")");
  }
  return status::ok();
}

} // namespace dtrain::train
