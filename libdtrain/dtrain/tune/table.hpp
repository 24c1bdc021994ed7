#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "dtrain/tune/trial.hpp"

namespace dtrain::tune {

/// The live trial table of a sweep (Ray Tune's CLIReporter): trial id,
/// status, the hyperparameters that vary, epochs, last and best value of the
/// metric, and time. On a terminal it is redrawn in place; otherwise the
/// sweep's events are appended as lines (one per trial start, epoch and end)
/// and the table is printed at the end. Not thread-safe: the tuner calls it
/// from its one thread.
class trial_table {
public:
  struct options {
    std::FILE* out = stdout;
    bool redraw = false;        // a terminal: redraw in place
    int verbosity = 2;          // 0 nothing, 1 trial starts and ends, 2 also every epoch
    size_t max_rows = 20;       // rows of a redrawn table (the rest summarised)
  };
  trial_table(options o, std::vector<std::string> columns, std::string metric, mode direction);

  /// Whether show() without `force` would draw now (a terminal, and 200 ms
  /// since the last drawing): callers may skip building its input.
  bool due() const;

  /// Trial id -> a line drawn under that trial's row (a running trial's
  /// progress bar), indented two columns.
  using bar_lines = std::map<std::string, std::string>;

  /// Redraws the table (terminal only; at most every 200 ms unless `force`),
  /// with `bars` under the rows they name.
  void show(const std::vector<trial_record>& trials, double elapsed_seconds,
            const std::string& headline, bool force = false, const bar_lines& bars = {});
  /// One event line (not a terminal, and verbosity at least `level`).
  void event(int level, const std::string& line);
  /// The final table, sorted by the metric, and the best trial's
  /// configuration and checkpoint directory.
  void summary(const result_grid& grid, double elapsed_seconds);

  /// The table as text: header, then rows in the given order, the first
  /// `max_rows` of them, each followed by its line of `bars` if it has one.
  std::string render(const std::vector<const trial_record*>& rows, size_t max_rows,
                     const bar_lines& bars = {}) const;

private:
  options options_;
  std::vector<std::string> columns_;
  std::string metric_;
  mode direction_;
  int drawn_lines_ = 0;
  double last_draw_ = -1;
};

} // namespace dtrain::tune
