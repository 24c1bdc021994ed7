#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::dashboard {

/// Writes the Prometheus text exposition format (version 0.0.4): for each
/// family one `# HELP` and one `# TYPE` line, then its samples; label
/// values and help text escaped as the format says; NaN and infinities
/// spelled NaN, +Inf, -Inf. Families must be written one after another
/// (all samples of a family right after its family() call). Not
/// thread-safe; nothing throws.
class prometheus_text {
public:
  using labels = std::vector<std::pair<std::string, std::string>>;

  /// Starts a family: `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* (checked:
  /// aborts otherwise, a broken invariant of the caller's constant names);
  /// `type` "gauge", "counter", "untyped", ...
  void family(const std::string& name, const std::string& help, const std::string& type);
  /// A sample of the current family, `suffix` appended to its name.
  void sample(double value, const labels& l = {}, const std::string& suffix = "");

  const std::string& text() const { return text_; }

private:
  std::string text_;
  std::string name_;
};

/// What /metrics shows, gathered by the routes from the head and the store.
struct metrics_input {
  bool cluster_ok = false;          // the head answered status
  actors::cluster_status cluster;
  bool store_ok = false;            // the store answered
  std::vector<experiments::experiment_row> experiments;
  std::vector<std::vector<experiments::trial_row>> trials;  // per experiment
  /// Per running trial (experiment, trial): its newest report's metrics.
  struct running_trial {
    int64_t experiment = 0;
    std::string trial;
    int64_t epoch = 0;
    std::vector<std::pair<std::string, double>> latest;  // name, value
  };
  std::vector<running_trial> running;
  int64_t rss_bytes = -1;           // -1: unknown
};

/// The /metrics document (names in docs/dashboard.md).
std::string head_metrics(const metrics_input& in);

} // namespace dtrain::dashboard
