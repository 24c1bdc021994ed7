#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::experiments {

/// The write errors of a store that several writers share (the SQLite
/// store's writer thread, the experiment service), kept per experiment
/// until a flush by that experiment's writer reports them: a failed write
/// never refuses a later one, and is never reported to the writer of
/// another experiment.
///
/// Each experiment keeps its first error (the one that tells a run which
/// rows are missing and why) and a count of the errors after it. At most
/// `capacity` experiments are kept: past that the smallest id is forgotten
/// (ids only grow, so that is the longest-standing), and writers that never
/// flush cannot grow it without bound. Not thread-safe.
class write_errors {
public:
  explicit write_errors(size_t capacity = 1024) : capacity_(capacity < 1 ? 1 : capacity) {}

  /// Keeps `s` (ignored when ok) as an error of `experiment`'s writes.
  void keep(int64_t experiment, const status& s);
  /// The kept errors of `experiments` as one status (ok when none; the
  /// earliest error's code, every message in the order they happened),
  /// then forgets them: each error is reported once.
  status take(const std::vector<int64_t>& experiments);
  /// Every kept error as one status (ok when none), then forgets them.
  status take_all();
  /// How many experiments have an error kept.
  size_t size() const { return kept_.size(); }

private:
  struct kept {
    status first;
    int64_t more = 0;  // errors after the first
    uint64_t order = 0;  // when the first one was kept
  };
  static status reported(std::vector<kept> errors);

  size_t capacity_;
  uint64_t next_order_ = 0;
  std::map<int64_t, kept> kept_;
};

} // namespace dtrain::experiments
