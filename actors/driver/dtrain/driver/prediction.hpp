#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "dtrain/driver/trainer.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// What predict() runs and writes.
struct predict_options {
  /// The operator's own set: "validation" or "train".
  std::string input = "validation";
  /// The CSV file written (see predict()); replaced only when complete.
  std::string output;
  int64_t chunk_rows = 1000;
  /// How long one chunk may take on a replica (its forward and the
  /// transfer of its outputs) before it is given to another and the
  /// replica gets no more: a replica on a dead node does not answer at
  /// all, and is noticed by this timeout only. Keep it well above one
  /// chunk's time.
  std::chrono::milliseconds chunk_timeout{60000};
  /// Called (on a worker thread) when replica `rank` has answered the chunk
  /// that starts at `begin`: for tests that fail a node mid-way.
  std::function<void(int rank, int64_t begin)> on_chunk;
};

struct predict_report {
  int64_t rows = 0;
  int64_t width = 0;          // outputs per row
  int64_t chunks = 0;
  int64_t redone = 0;         // chunks given to another replica after a failure
  int replicas = 0;           // replicas that took part
  int failed_replicas = 0;
  double seconds = 0;
  double rows_per_second = 0;
  /// Correct argmax predictions over the rows, for a classifier (the
  /// operator's `classification`, several outputs, one target); else -1.
  double accuracy = -1;
};

/// Distributed batch inference: the rows of `input` are cut into chunks of
/// chunk_rows, and every replica of `t` (restored from a checkpoint first,
/// as the caller wishes) takes chunks one at a time from a shared queue and
/// answers each with its model's forward in evaluation mode. A replica that
/// fails or does not answer within chunk_timeout gets no more chunks, and
/// the chunk it held goes back to the queue for another: every row is
/// computed exactly once in the file. The file, written once all rows are
/// in, is CSV: a header `index,target,prediction,output_0,...`, then one
/// line per row in input order: the row index, its target (targets joined
/// by ';' when there are several), the argmax of its outputs for a
/// classifier (empty otherwise), and the outputs (%.9g); an empty input
/// gives the header alone. Replies are checked (their rows and widths)
/// before they count. Every output is held in the driver until the file
/// is written: rows x (outputs + targets) x 4 bytes. Each replica sets its CPU thread
/// share once, at the start, so a chunk redone after a failure is computed
/// as the first try would have been: the file is the same bit for bit.
/// Errors: no replica left with rows
/// still to do (naming the last replica's error), the file not writable.
result<predict_report> predict(trainer& t, const predict_options& options);

} // namespace dtrain::actors
