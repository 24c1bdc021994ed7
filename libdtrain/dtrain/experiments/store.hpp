#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::experiments {

/// The experiment store: what every `dtrain train` and `dtrain tune` run
/// leaves behind (Determined's experiments/trials/metrics/checkpoints
/// tables, Optuna's RDB storage), so results outlive the terminal and a
/// sweep can resume after its driver died.
///
/// Ordering: the tuner numbers every event of an experiment (a trial
/// created, a report, a checkpoint seen, an exploit, a trial ended) with a
/// sequence number `seq`, increasing within the experiment. Resuming a
/// sweep replays the events in `seq` order into a fresh searcher and
/// scheduler, which rebuilds their state (random generator position, grid
/// position, ASHA rungs, PBT population) exactly. The trainer's events
/// (event_row: failures, recoveries) share the numbering and are skipped
/// by that replay.
///
/// Values: every double (metrics, best, last) reads back as it was
/// written, NaN and +-infinity included.

inline constexpr double no_value = std::numeric_limits<double>::quiet_NaN();

/// One run of `dtrain train` (one trial) or `dtrain tune` (a sweep).
struct experiment_row {
  int64_t id = 0;                 // assigned by create_experiment: 1, 2, ...
  std::string name;               // the experiment file's name
  std::string kind;               // "train" | "tune"
  std::string configuration;      // the experiment as canonical YAML (experiments::to_yaml)
  std::string config_hash;        // 16 hex digits of a hash of `configuration`
  std::string state = "running";  // running | completed | interrupted | failed
  std::string storage;            // this experiment's checkpoint directory ("" none)
  std::string metric;             // the metric that ranks its trials
  bool minimize = false;
  double created_at = 0;          // unix seconds
  double updated_at = 0;
  double ended_at = 0;            // 0 while it has not ended
  std::string owner;              // "host pid" of the driver running it now ("" none)
  std::string message;            // why it ended: the stop reason or the error
};

/// One trial of an experiment.
struct trial_row {
  int64_t experiment = 0;
  std::string id;                 // "00003": unique within the experiment
  int64_t seq_created = 0;        // when the searcher suggested it
  std::string hyperparameters;    // its configuration now, tune::to_json (PBT changes it)
  std::string state = "pending";  // tune::trial_status names, plus "interrupted"
  int restarts = 0;
  std::string error;
  double best = no_value;         // best and last value of the experiment's metric
  double last = no_value;
  int64_t epochs = 0;             // the last epoch reported
  std::string checkpoint_dir;     // "" none
  int64_t seq_ended = 0;          // 0 while it has not ended
  std::string end_how;            // "completed" | "stopped" | "failed" ("" not ended)
  double started_at = 0;          // unix seconds, 0 never
  double ended_at = 0;
};

/// One metric of one report: a report of four metrics is four rows with
/// the same seq.
struct metric_row {
  int64_t experiment = 0;
  std::string trial;
  int64_t epoch = 0;
  std::string name;               // "loss", "validation_accuracy", ...
  double value = no_value;
  int64_t seq = 0;
  double time = 0;                // unix seconds
};

/// A checkpoint a trial wrote (recorded when the tuner or driver saw it).
struct checkpoint_row {
  int64_t experiment = 0;
  std::string trial;
  int64_t epoch = 0;
  std::string path;               // the checkpoint directory: unique within the experiment
  double metric = no_value;       // the experiment's metric at that epoch
  bool valid = true;              // false once retention deleted it or it failed verification
  int64_t seq = 0;
  double time = 0;
};

/// A PBT exploit: `trial` continued from `source`'s checkpoint of
/// `source_epoch` with new hyperparameters.
struct lineage_row {
  int64_t experiment = 0;
  std::string trial;
  int64_t seq = 0;
  int64_t epoch = 0;              // the trial's epoch when it exploited
  std::string source;
  int64_t source_epoch = 0;
  std::string before;             // hyperparameters, tune::to_json
  std::string after;
  double time = 0;
};

/// Something that happened to a trial's group of replicas, for people
/// (the dashboard, `dtrain experiments show`): informational only, a
/// resume never replays it. Numbered by the experiment's seq like every
/// other row. Kinds:
///   "failure"   a replica or node failed: `message` is the cause as the
///               trainer saw it ("failure 1 of at most 3: ...");
///   "recovered" the group trains again: with how many replicas, from
///               which checkpoint epoch;
///   "gave_up"   the trainer stopped recovering (max_failures reached, an
///               error that would repeat, no capacity): the error;
///   "shrank"    an elastic group re-formed with fewer than num_replicas;
///   "grew"      an elastic group grew back towards num_replicas.
struct event_row {
  int64_t experiment = 0;
  std::string trial;
  int64_t seq = 0;
  /// The epoch the event concerns: for a failure, the one the group was
  /// in (the last reported + 1, or the last reported while it was saved
  /// or validated); for a recovery, the epoch it trains again; 0 before any.
  int64_t epoch = 0;
  double time = 0;                // unix seconds
  std::string kind;
  std::string message;
};

/// One interface, two implementations: SQLite on the machine that keeps
/// the store (the head, or the driver's own for an embedded cluster) and a
/// client that writes through the head (actors/experiments).
///
/// Writes may be asynchronous and batched (one transaction for many rows):
/// a write's error surfaces at the latest at the next flush(). Reads see
/// every write this object accepted before them. Thread-safe.
///
/// Failures stay with their experiment: a write that fails loses only its
/// own rows, never refuses a later write (of its experiment or another)
/// nor create/update/delete_experiment, and its error is kept for the
/// experiment until a flush reports it. A failure that may pass (a lock
/// held by another process, I/O, a full disk) is tried again by the store
/// before the rows are given up.
class experiment_store {
public:
  virtual ~experiment_store() = default;

  /// Stores `e` as a new experiment and returns its id (e.id is ignored).
  virtual result<int64_t> create_experiment(const experiment_row& e) = 0;
  /// Replaces every field of experiment e.id; not_found names the id.
  virtual status update_experiment(const experiment_row& e) = 0;
  /// not_found: "no experiment 12 in /path/experiments.db".
  virtual result<experiment_row> experiment(int64_t id) = 0;
  /// Every experiment, by id.
  virtual result<std::vector<experiment_row>> experiments() = 0;
  /// Removes the experiment and every row of it (not its files).
  virtual status delete_experiment(int64_t id) = 0;

  /// Inserts or replaces trial (t.experiment, t.id).
  virtual status put_trial(const trial_row& t) = 0;
  /// The experiment's trials, by seq_created.
  virtual result<std::vector<trial_row>> trials(int64_t experiment) = 0;

  virtual status add_metrics(const std::vector<metric_row>& rows) = 0;
  /// By seq, then name; `trial` "" = every trial.
  virtual result<std::vector<metric_row>> metrics(int64_t experiment,
                                                  const std::string& trial = "") = 0;

  /// Inserts or replaces (c.experiment, c.path).
  virtual status put_checkpoint(const checkpoint_row& c) = 0;
  /// By seq; `trial` "" = every trial.
  virtual result<std::vector<checkpoint_row>> checkpoints(int64_t experiment,
                                                          const std::string& trial = "") = 0;

  virtual status add_lineage(const lineage_row& l) = 0;
  /// By seq.
  virtual result<std::vector<lineage_row>> lineage(int64_t experiment) = 0;

  /// One-way like add_metrics: inserts or replaces (e.experiment, e.seq).
  virtual status add_event(const event_row& e) = 0;
  /// By seq; `trial` "" = every trial. A store written before events
  /// existed has none.
  virtual result<std::vector<event_row>> events(int64_t experiment,
                                                const std::string& trial = "") = 0;

  /// Every write accepted before it is durable, or the write errors of
  /// every experiment not reported yet (each experiment's first error,
  /// then forgotten), or that some writes wait for another attempt.
  virtual status flush() = 0;
  /// flush() for one writer among several that share this store (the
  /// experiment service, for each of its clients): the same durability,
  /// but only the errors of writes of `experiments` are reported (and
  /// forgotten); the others stay for their own writers. By default flush().
  virtual status flush_experiments(const std::vector<int64_t>& experiments) {
    (void)experiments;
    return flush();
  }
  /// Where the store is, for messages ("/home/u/.dtrain/experiments.db",
  /// "the head at 10.0.0.1:7000").
  virtual std::string where() const = 0;
};

struct sqlite_options {
  bool read_only = false;   // readers (`dtrain experiments`); never creates or migrates
  int busy_timeout_ms = 10000;
  /// Writes wait in memory at most this long before their transaction.
  int batch_ms = 50;
};

/// The schema version this dtrain writes (PRAGMA user_version).
int sqlite_schema_version();

/// Opens (creating it and its directory when missing, unless read_only)
/// the SQLite store at `path`: WAL mode, one writer thread that commits
/// batched writes, migrations from every older schema version applied in
/// one transaction. Errors name the path and leave the file untouched: a
/// file that is not an SQLite database or fails its integrity check
/// (corrupt_data), a schema newer than this dtrain knows (invalid_argument
/// naming both versions), no permission (io_error).
result<std::unique_ptr<experiment_store>> open_sqlite_store(const std::string& path,
                                                            const sqlite_options& o = {});

} // namespace dtrain::experiments
