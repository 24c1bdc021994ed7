#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/sqlite.hpp"

/// The SQLite store's writer connection and the writes it commits (private
/// to store/, used by sqlite_store.cpp).
namespace dtrain::experiments::sqlite {

/// A write waiting for the writer thread: a copy of its rows (the metrics
/// of one experiment), the experiment they belong to, and how many of its
/// attempts failed for a transient reason so far.
struct queued_write {
  std::variant<trial_row, std::vector<metric_row>, checkpoint_row, lineage_row, event_row> rows;
  int64_t experiment = 0;
  int failed_attempts = 0;
  status last_failure;  // why the last attempt failed (ok before any)
};

/// The store operation a write came from ("put_trial"), for messages.
const char* operation_of(const queued_write& w);

/// Whether `s`, the failure of a commit, may pass if the commit is tried
/// again: a lock held past busy_timeout, an I/O error, a full disk.
bool transient(const status& s);

/// Which writes of a batch did not land, and why.
struct commit_outcome {
  /// Not ok: the whole batch failed with it (nothing of it landed).
  status batch;
  /// Otherwise the writes the database refused, by index in the batch
  /// (the others landed), each error naming its operation and experiment.
  std::vector<std::pair<size_t, status>> refused;
};

/// The writer connection and its statements, prepared once. One thread
/// at a time.
struct writer {
  connection db;
  statement put_trial, add_metric, put_checkpoint, add_lineage, add_event;

  /// Opens `path` for writing (WAL, foreign keys on) and migrates it.
  static result<writer> open(const std::string& path, const sqlite_options& o);
  /// Commits `batch` in one transaction. When the database refuses a
  /// write (a constraint: a row of an experiment that does not exist, or
  /// was deleted while its run still wrote), the others go again, one
  /// transaction each, so that only the refused rows are lost.
  commit_outcome commit(const std::vector<queued_write>& batch);

private:
  status apply(const queued_write& w);
  // batch[first, last) in one transaction.
  status apply_all(const std::vector<queued_write>& batch, size_t first, size_t last);
  // The error of write `w` as its writer reads it.
  status explain(const queued_write& w, const status& s);
};

} // namespace dtrain::experiments::sqlite
