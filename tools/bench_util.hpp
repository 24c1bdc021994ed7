#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

/// What every benchmark program needs: medians, and the output of the
/// peer it runs (a PyTorch script) line by line.
namespace dtrain::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Runs `command` (stderr merged into stdout) and hands each output line to
/// `on_line`; false if it could not be started.
inline bool for_each_output_line(const std::string& command,
                                 const std::function<void(const char*)>& on_line) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr)
    return false;
  char line[512];
  while (std::fgets(line, sizeof line, pipe) != nullptr)
    on_line(line);
  pclose(pipe);
  return true;
}

} // namespace dtrain::bench
