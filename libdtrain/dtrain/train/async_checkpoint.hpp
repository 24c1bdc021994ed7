#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::train {

class replica_context;

/// When a replica group takes step-granular, asynchronous checkpoints and
/// where they go (Determined's min_checkpoint_period). Off unless `root` is
/// set and one of the periods is positive; with both, whichever comes first.
struct async_checkpoint_options {
  std::string root;             // the checkpoint root (the trainer's checkpoint_dir)
  int keep_last = 2;            // retention after each save (apply_retention)
  int64_t every_steps = 0;      // optimizer steps between saves; 0: off
  double every_seconds = 0;     // seconds of training between saves; 0: off
  /// FOR TESTS ONLY: the background writer sleeps this long after writing
  /// each shard, before it counts as written, so that a test can hold a
  /// save in flight (a save slower than its interval, a kill while shards
  /// lie in the temporary directory without a manifest). 0 in production.
  std::chrono::milliseconds test_write_delay{0};

  bool enabled() const { return !root.empty() && (every_steps > 0 || every_seconds > 0); }
};

/// One rank's copy of the state at a step boundary: the manifest the
/// checkpoint will carry (all but its shard list) and this rank's slice of
/// every buffer, in host memory, so that training may change the live
/// state while the copy is written.
struct checkpoint_snapshot {
  checkpoint::manifest manifest;  // shards empty; extra only on the chief
  struct buffer {
    std::string name;
    int64_t count = 0;                    // the whole buffer's elements
    int64_t begin = 0, end = 0;           // the slice this rank holds
    std::unique_ptr<float[]> data;        // [count]; only [begin, end) filled
    int64_t held = 0;                     // floats in data
    /// A shard of the state (ZeRO): the ranges this rank writes instead of
    /// [begin, end), packed in order at the start of data (maybe none), or
    /// not `packed`, each at its own position (stage 3's parameters).
    bool sharded = false;
    std::vector<optim::span> pieces;
    bool packed = true;
  };
  std::vector<buffer> buffers;
  int rank = 0, world_size = 1;
};

/// Writes the chief's manifest for `m` (shards filled in) into save.temp,
/// publishes the save (checkpoint::publish) and applies retention under
/// `root`; a failed retention is only logged to stderr (the checkpoint is
/// whole). What save() and the asynchronous saves share.
status commit_manifest(checkpoint::codec& codec, const std::string& root,
                       const checkpoint::pending_save& save, const checkpoint::manifest& m,
                       int keep_last, const std::string& best_metric, bool smaller_is_better);

/// Asynchronous checkpoints of one replica (one per replica_runner; the
/// runner calls it from its training thread, every replica at the same
/// step boundaries). At a step boundary where a save is due (every_steps
/// from the group's optimizer step count, every_seconds from the chief's
/// clock, shared with a tiny all-reduce), every rank takes a snapshot
/// (capture) and hands it to its background writer thread, which writes
/// this rank's shard while training goes on. At later step boundaries the
/// group polls (one all-reduce of two floats per boundary while a save is
/// in flight): once every rank's shard is written, the shard descriptions
/// are all-gathered and the chief's writer writes the manifest, publishes
/// and applies retention, in the background too. The checkpoint is the one
/// save() would have written at that step (same format, same names:
/// restore() reads it), and until it is published every older checkpoint
/// stays whole, so a kill at any point loses only the save in flight.
///
/// At most one save is in flight: one that comes due while the previous is
/// being written waits for the first step boundary after it finished, never
/// blocking training. A failed write is logged to stderr, what it wrote is
/// removed, and the next save is tried at the next period.
///
/// Thread safety: every call but abandon() and counters() on the training
/// thread; the writer thread touches only the snapshot it was handed.
/// Collective failures (a peer died) are returned; the save in flight is
/// then left to abandon() or the destructor.
class async_checkpointer {
public:
  /// Fills a snapshot at the current step boundary (may run collectives:
  /// it is called on every rank at the same step).
  using capture_fn = std::function<status(checkpoint_snapshot&)>;

  async_checkpointer(async_checkpoint_options options, std::shared_ptr<checkpoint::codec> codec,
                     bool smaller_is_better);
  /// Abandons a save in flight (see abandon()) and joins the writer,
  /// which finishes the file it is writing first.
  ~async_checkpointer();
  async_checkpointer(const async_checkpointer&) = delete;
  async_checkpointer& operator=(const async_checkpointer&) = delete;

  /// At a step boundary, `step` = the group's optimizer steps (the same on
  /// every rank). Starts, advances or completes a save as described above.
  /// Errors: the group's collectives failed, or the chief could not begin
  /// a save (the root unusable: the error names it).
  status at_step(replica_context& ctx, int64_t step, const capture_fn& capture);
  /// At the end of an epoch (or before the group stops): waits until the
  /// save in flight is written and published (or has failed). A collective.
  status finish(replica_context& ctx);
  /// The group re-formed after a failure (or is going away): forgets the
  /// save in flight without any collective. A shard being written is
  /// finished by the writer and then deleted with the save's temporary
  /// directory (a straggler's file may leave the directory behind, for the
  /// next save's retention to clear); the save is never published (unless
  /// its manifest was already being written: then it is whole and valid).
  /// The next save starts afresh from the next at_step().
  void abandon();

  /// What the saves did so far (any thread).
  struct counts {
    int64_t started = 0;    // snapshots taken
    int64_t published = 0;  // checkpoints published (chief only)
    int64_t failed = 0;     // saves that failed (writes, manifest, publish)
    int64_t waited = 0;     // step boundaries where a due save waited for the one in flight
    int64_t abandoned = 0;
    int64_t max_in_flight = 0;  // the most jobs the writer ever held at once (1 when saves never overlap)
    int64_t steps_in_flight = 0;  // step boundaries passed while a save was in flight
    double snapshot_seconds = 0;  // total time steps were blocked taking snapshots
  };
  counts counters() const;
  /// The last checkpoint this rank's writer published (chief), or "".
  std::string last_published() const;

private:
  enum class phase { idle, writing, committing };
  struct job;

  /// The poll's all-reduce: {ranks whose writer is idle, the chief's
  /// seconds-based "due"}.
  result<std::pair<int, bool>> poll(replica_context& ctx);
  status start_save(replica_context& ctx, int64_t step, const capture_fn& capture);
  status end_writing(replica_context& ctx);
  bool chief_seconds_due() const;
  void post(std::shared_ptr<job> j);
  bool writer_idle() const;
  void wait_writer_idle();
  void writer_loop();
  void run(job& j);

  async_checkpoint_options options_;
  std::shared_ptr<checkpoint::codec> codec_;
  bool smaller_is_better_;
  phase phase_ = phase::idle;
  std::optional<int64_t> next_due_step_;  // from the first step seen
  double trained_seconds_ = 0;            // since the last snapshot (chief's clock)
  std::optional<std::chrono::steady_clock::time_point> last_boundary_;
  checkpoint::pending_save pending_;
  std::shared_ptr<checkpoint_snapshot> snapshot_;  // reused between saves
  std::shared_ptr<job> current_;                   // the save in flight's last job

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<std::shared_ptr<job>> queue_;
  int busy_ = 0;  // jobs posted and not finished
  bool stopping_ = false;
  counts counts_;
  std::string last_published_;
  std::thread writer_;
};

} // namespace dtrain::train
