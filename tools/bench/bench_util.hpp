#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/core/random.hpp"

/// What every benchmark program needs: medians, and the output of the
/// peer it runs (a PyTorch script) line by line.
namespace dtrain::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// A 90% bootstrap interval of the median of `v` (2,000 resamples, a fixed
/// generator): how much of a gap between two medians the choice of seeds
/// alone explains. NaNs for an empty `v`.
inline std::pair<double, double> median_interval(const std::vector<double>& v) {
  if (v.empty())
    return {NAN, NAN};
  rng r(12345);
  std::vector<double> medians, resample(v.size());
  for (int b = 0; b < 2000; ++b) {
    for (double& x : resample)
      x = v[r.below(v.size())];
    medians.push_back(median(resample));
  }
  std::sort(medians.begin(), medians.end());
  return {medians[100], medians[1899]};
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

/// What ../shared/peers/torch_ddp_mlp.py printed: per world size N its
/// row, and the single-process (no DDP) step with 1 torch and 1 OpenBLAS
/// thread.
struct torch_ddp_mlp_figures {
  struct row {
    double step_ms = 0, fb_ms = 0, exposed_ms = 0, ar_ms = 0, samples_per_second = 0;
  };
  std::map<int, row> rows;
  double single_process_ms = 0;
};

/// Runs the peer with `/usr/bin/python3 SCRIPT --steps STEPS --nprocs
/// WORLDS...` and parses its output; what it did not print stays absent
/// (or 0).
inline torch_ddp_mlp_figures run_torch_ddp_mlp(const std::string& script,
                                               const std::vector<int>& worlds, int steps) {
  // " N  t/b  step_ms  fb_ms  exposed_ms  ar_ms  samples/s  params_equal"
  const std::regex row(
      R"(^\s*([0-9]+)\s+\S+\s+([0-9.]+)\s+([0-9.]+)\s+([-0-9.]+)\s+([0-9.]+)\s+([0-9.]+))");
  const std::regex single(R"(torch threads=1 OpenBLAS threads=1: step ([0-9.]+) ms)");
  std::string command = "/usr/bin/python3 " + script + " --steps " + std::to_string(steps) +
                        " --nprocs";
  for (int n : worlds)
    command += " " + std::to_string(n);
  torch_ddp_mlp_figures out;
  for_each_output_line(command, [&](const char* line) {
    std::cmatch m;
    if (std::regex_search(line, m, row))
      out.rows[std::stoi(m[1].str())] = {std::stod(m[2].str()), std::stod(m[3].str()),
                                         std::stod(m[4].str()), std::stod(m[5].str()),
                                         std::stod(m[6].str())};
    else if (std::regex_search(line, m, single))
      out.single_process_ms = std::stod(m[1].str());
  });
  return out;
}

} // namespace dtrain::bench
