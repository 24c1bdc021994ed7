// The SQLite experiment store: one writer thread that commits queued
// writes in batches on its own connection, reads on a second, read-only
// connection. See experiment_store.hpp for the contract.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/sqlite.hpp"
#include "dtrain/experiments/sqlite_rows.hpp"
#include "dtrain/experiments/sqlite_schema.hpp"
#include "dtrain/experiments/sqlite_writer.hpp"
#include "dtrain/experiments/write_errors.hpp"

namespace dtrain::experiments {

int sqlite_schema_version() { return schema::current_version; }

namespace {

using clock_type = std::chrono::steady_clock;
using sqlite::queued_write;
using sqlite::writer;

// The queue commits at once when it holds this many writes, whatever
// batch_ms says: a transaction's size stays bounded when writes come
// faster than batch_ms.
constexpr size_t max_batch = 20000;
// Writes wait (rather than grow memory without bound) while this many are
// queued behind the transaction in progress: a producer faster than
// SQLite for long is slowed to its pace. The tuner, at about 46,000
// results/s with the store, stays far below it.
constexpr size_t max_queued = 16 * max_batch;
// A write whose commit fails for a transient reason (a lock held past
// busy_timeout, I/O, a full disk) is tried again after a backoff (100 ms,
// doubling, at most 1.6 s) up to this many times in all, then given up
// with its error kept for its experiment. With the default busy_timeout of
// 10 s, a lock may be held for about 50 s before a write is lost.
constexpr int max_attempts = 5;

std::chrono::milliseconds backoff(int failed_attempts) {
  return std::chrono::milliseconds(100 << std::min(failed_attempts - 1, 4));
}

/// experiment_store over one SQLite file. Writes (put_trial, add_metrics,
/// put_checkpoint, add_lineage, add_event) copy their rows into a queue and return;
/// the writer thread commits the queue in one transaction batch_ms after
/// its first write, at once when a flush, a read or the destructor asks,
/// or when it holds max_batch writes. create/update/delete_experiment wait
/// for the queue and run on the writer's connection, so their results are
/// synchronous. Reads wait for the queue (not for an fsync) and run on a
/// read-only connection, so they see every write accepted before them and
/// never block the writer. Read-only stores have neither queue nor thread,
/// and may be of schema version 2, whose missing events read as none.
///
/// Failures: a write the database refuses is dropped alone and its error
/// kept for its experiment (write_errors); a batch that fails for a
/// transient reason stays queued and is tried again (max_attempts, with a
/// backoff), and until it lands a flush of its experiment says so (reads
/// meanwhile do not see it). No error refuses a later write, of any
/// experiment, nor create/update/delete_experiment.
/// Thread-safe; the destructor flushes and joins.
class sqlite_store final : public experiment_store {
public:
  sqlite_store(std::string path, const sqlite_options& o, std::optional<writer> w,
               sqlite::connection reader, int version);
  ~sqlite_store() override;

  result<int64_t> create_experiment(const experiment_row& e) override;
  status update_experiment(const experiment_row& e) override;
  result<experiment_row> experiment(int64_t id) override;
  result<std::vector<experiment_row>> experiments() override;
  status delete_experiment(int64_t id) override;

  status put_trial(const trial_row& t) override { return enqueue(t, t.experiment); }
  result<std::vector<trial_row>> trials(int64_t experiment) override;
  status add_metrics(const std::vector<metric_row>& rows) override;
  result<std::vector<metric_row>> metrics(int64_t experiment, const std::string& trial) override;
  status put_checkpoint(const checkpoint_row& c) override { return enqueue(c, c.experiment); }
  result<std::vector<checkpoint_row>> checkpoints(int64_t experiment,
                                                  const std::string& trial) override;
  status add_lineage(const lineage_row& l) override { return enqueue(l, l.experiment); }
  result<std::vector<lineage_row>> lineage(int64_t experiment) override;
  status add_event(const event_row& e) override { return enqueue(e, e.experiment); }
  result<std::vector<event_row>> events(int64_t experiment, const std::string& trial) override;

  status flush() override { return flush_reporting(nullptr); }
  status flush_experiments(const std::vector<int64_t>& experiments) override {
    return flush_reporting(&experiments);
  }
  std::string where() const override { return path_; }

private:
  template <class Rows>
  status enqueue(Rows rows, int64_t experiment);
  /// Blocks until every write accepted so far was tried once (committed,
  /// or failed and kept for another attempt, or dropped).
  void wait_for_writes();
  void writer_loop();
  /// Under queue_mutex_: what becomes of the writes of `batch` that did
  /// not land (outcome): kept errors, or the queue's front again.
  void settle(std::vector<queued_write>& batch, const sqlite::commit_outcome& outcome);
  /// Under queue_mutex_: a status for the writes of `experiments` (every
  /// experiment: null) that wait for another attempt; ok when none.
  status waiting_writes(const std::vector<int64_t>* experiments) const;
  status flush_reporting(const std::vector<int64_t>* experiments);
  status sync_wal();
  status read_only_error() const {
    return invalid_argument(path_ + " is open read-only: no writes");
  }
  /// Runs `sql` with `bind` applied and reads every row with `read`.
  template <class Row, class Bind>
  result<std::vector<Row>> select(const std::string& sql, const Bind& bind,
                                  Row (*read)(const sqlite::statement&));

  const std::string path_;
  const sqlite_options options_;
  const int version_;  // the file's schema version (current once a writer migrated it)

  // The writer connection (absent when read-only): the writer thread's,
  // and create/update/delete_experiment's after they waited for the queue.
  std::mutex write_mutex_;
  std::optional<writer> writer_;

  std::mutex read_mutex_;  // guards reader_
  sqlite::connection reader_;

  // The queue, guarded by queue_mutex_. Writes are counted: accepted_ by
  // enqueue, committed_ once their first transaction ended (well or not),
  // wanted_ the count a waiter needs committed now. Writes kept for
  // another attempt are at the queue's front, tried again from retry_at_.
  std::mutex queue_mutex_;
  std::condition_variable queue_changed_, committed_changed_;
  std::vector<queued_write> queue_;
  clock_type::time_point first_queued_, retry_at_;
  uint64_t accepted_ = 0, committed_ = 0, wanted_ = 0;
  write_errors errors_;    // of the writes given up, by experiment, until a flush reports them
  bool unsynced_ = false;  // commits since the last sync_wal
  bool stopping_ = false;
  std::thread writer_thread_;
};

sqlite_store::sqlite_store(std::string path, const sqlite_options& o, std::optional<writer> w,
                           sqlite::connection reader, int version)
  : path_(std::move(path)), options_(o), version_(version), writer_(std::move(w)),
    reader_(std::move(reader)) {
  if (writer_)
    writer_thread_ = std::thread([this] { writer_loop(); });
}

sqlite_store::~sqlite_store() {
  if (!writer_thread_.joinable())
    return;
  // A destructor cannot return the error: say it, or it is lost.
  if (const status s = flush(); !s.is_ok())
    std::fprintf(stderr, "dtrain: closing the experiment store: %s\n", s.to_string().c_str());
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
  }
  queue_changed_.notify_one();
  writer_thread_.join();  // after the attempts left to writes kept for another one
  if (const status s = errors_.take_all(); !s.is_ok())
    std::fprintf(stderr, "dtrain: closing the experiment store: %s\n", s.to_string().c_str());
}

// ---------------------------------------------------------------------------
// Writes

template <class Rows>
status sqlite_store::enqueue(Rows rows, int64_t experiment) {
  if (!writer_)
    return read_only_error();
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (queue_.size() >= max_queued) {
    queue_changed_.notify_one();
    committed_changed_.wait(lock, [&] { return stopping_ || queue_.size() < max_queued; });
  }
  if (queue_.empty())
    first_queued_ = clock_type::now();
  queue_.push_back(queued_write{std::move(rows), experiment, 0, {}});
  ++accepted_;
  if (queue_.size() == 1 || queue_.size() >= max_batch)
    queue_changed_.notify_one();
  return status::ok();
}

status sqlite_store::add_metrics(const std::vector<metric_row>& rows) {
  // One queued write per experiment, so that a failure of one
  // experiment's rows never takes another's with it.
  std::vector<metric_row> same;
  for (size_t i = 0; i < rows.size(); ++i) {
    same.push_back(rows[i]);
    if (i + 1 == rows.size() || rows[i + 1].experiment != rows[i].experiment) {
      DTRAIN_RETURN_IF_ERROR(enqueue(std::move(same), rows[i].experiment));
      same.clear();
    }
  }
  return status::ok();
}

void sqlite_store::writer_loop() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  for (;;) {
    queue_changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;  // stopping, and every write is committed or given up
    // Nothing is tried before retry_at_ (the backoff after a transient
    // failure), whoever asks; writes kept for another attempt are tried
    // then, whether someone asks or not.
    const bool retrying = queue_.front().failed_attempts > 0;
    const auto due =
        retrying ? retry_at_
                 : std::max(first_queued_ + std::chrono::milliseconds(options_.batch_ms), retry_at_);
    queue_changed_.wait_until(lock, due, [&] {
      return clock_type::now() >= retry_at_ &&
             (retrying || stopping_ || wanted_ > committed_ || queue_.size() >= max_batch);
    });
    std::vector<queued_write> batch;
    batch.swap(queue_);
    const uint64_t upto = accepted_;
    lock.unlock();
    sqlite::commit_outcome outcome;
    {
      std::lock_guard<std::mutex> write_lock(write_mutex_);
      outcome = writer_->commit(batch);
    }
    lock.lock();
    settle(batch, outcome);
    committed_ = upto;
    unsynced_ = true;
    committed_changed_.notify_all();
  }
}

void sqlite_store::settle(std::vector<queued_write>& batch, const sqlite::commit_outcome& outcome) {
  std::vector<queued_write> again;
  auto failed = [&](queued_write& w, const status& s) {
    if (!sqlite::transient(s)) {
      errors_.keep(w.experiment, s);
      return;
    }
    w.last_failure = s;
    if (++w.failed_attempts < max_attempts) {
      again.push_back(std::move(w));
      return;
    }
    errors_.keep(w.experiment,
                 s.with_context(std::string(sqlite::operation_of(w)) + " for experiment " +
                                std::to_string(w.experiment) + ": given up after " +
                                std::to_string(max_attempts) + " attempts"));
  };
  if (!outcome.batch.is_ok()) {
    for (queued_write& w : batch)
      failed(w, sqlite::transient(outcome.batch)
                    ? outcome.batch
                    : outcome.batch.with_context(std::string(sqlite::operation_of(w)) +
                                                 " for experiment " +
                                                 std::to_string(w.experiment)));
  } else {
    for (const auto& [i, s] : outcome.refused)
      failed(batch[i], s);
  }
  if (again.empty())
    return;
  // In front of the writes queued meanwhile: each experiment's rows keep
  // their order.
  int most = 0;
  for (const queued_write& w : again)
    most = std::max(most, w.failed_attempts);
  retry_at_ = clock_type::now() + backoff(most);
  std::move(queue_.begin(), queue_.end(), std::back_inserter(again));
  queue_.swap(again);
}

status sqlite_store::waiting_writes(const std::vector<int64_t>* experiments) const {
  const queued_write* first = nullptr;
  size_t count = 0;
  // Writes kept for another attempt are the queue's front.
  for (const queued_write& w : queue_) {
    if (w.failed_attempts == 0)
      break;
    if (experiments != nullptr &&
        std::find(experiments->begin(), experiments->end(), w.experiment) == experiments->end())
      continue;
    if (first == nullptr)
      first = &w;
    ++count;
  }
  if (first == nullptr)
    return status::ok();
  return first->last_failure.with_context(
      "experiment " + std::to_string(first->experiment) + ": " + std::to_string(count) +
      " write" + (count == 1 ? "" : "s") + " not stored yet, tried again (" +
      std::to_string(first->failed_attempts) + " of " + std::to_string(max_attempts) +
      " attempts failed so far)");
}

void sqlite_store::wait_for_writes() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const uint64_t target = accepted_;
  if (committed_ < target) {
    wanted_ = std::max(wanted_, target);
    queue_changed_.notify_one();
    committed_changed_.wait(lock, [&] { return committed_ >= target; });
  }
}

// With synchronous = NORMAL a commit reaches the WAL file without an
// fsync; syncing that file makes every commit in it durable (what
// synchronous = FULL does at each commit). A checkpoint syncs the database
// before it empties the WAL, so no commit is ever only in an unsynced
// database file.
status sqlite_store::sync_wal() {
  const std::string wal = path_ + "-wal";
  const int fd = ::open(wal.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? status::ok() : os_error("open", wal, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? status::ok() : os_error("fsync", wal, err);
}

status sqlite_store::flush_reporting(const std::vector<int64_t>* experiments) {
  if (!writer_)
    return status::ok();
  wait_for_writes();
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const status kept = experiments != nullptr ? errors_.take(*experiments) : errors_.take_all();
  const status waiting = waiting_writes(experiments);
  const bool sync = std::exchange(unsynced_, false);
  lock.unlock();
  status synced;
  if (sync) {
    synced = sync_wal();
    if (!synced.is_ok()) {
      lock.lock();
      unsynced_ = true;
    }
  }
  return !kept.is_ok() ? kept : !waiting.is_ok() ? waiting : synced;
}

result<int64_t> sqlite_store::create_experiment(const experiment_row& e) {
  if (!writer_)
    return read_only_error();
  wait_for_writes();
  std::lock_guard<std::mutex> lock(write_mutex_);
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement s, writer_->db.prepare(rows::insert_experiment));
  rows::bind(s, e);
  DTRAIN_RETURN_IF_ERROR(s.run());
  std::lock_guard<std::mutex> queue_lock(queue_mutex_);
  unsynced_ = true;
  return writer_->db.last_insert_id();
}

status sqlite_store::update_experiment(const experiment_row& e) {
  if (!writer_)
    return read_only_error();
  wait_for_writes();
  std::lock_guard<std::mutex> lock(write_mutex_);
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement s, writer_->db.prepare(rows::update_experiment));
  rows::bind_update(s, e);
  DTRAIN_RETURN_IF_ERROR(s.run());
  if (writer_->db.changes() == 0)
    return not_found("no experiment " + std::to_string(e.id) + " in " + path_);
  std::lock_guard<std::mutex> queue_lock(queue_mutex_);
  unsynced_ = true;
  return status::ok();
}

status sqlite_store::delete_experiment(int64_t id) {
  if (!writer_)
    return read_only_error();
  wait_for_writes();
  std::lock_guard<std::mutex> lock(write_mutex_);
  sqlite::connection& db = writer_->db;
  DTRAIN_ASSIGN_OR_RETURN(sqlite::transaction t, sqlite::transaction::begin(db));
  const std::string where = " WHERE experiment = " + std::to_string(id);
  // Children first: the foreign keys refuse an experiment with rows left.
  for (const char* table : {"metrics", "trials", "checkpoints", "lineage", "events"})
    DTRAIN_RETURN_IF_ERROR(db.exec(std::string("DELETE FROM ") + table + where));
  DTRAIN_RETURN_IF_ERROR(db.exec("DELETE FROM experiments WHERE id = " + std::to_string(id)));
  if (db.changes() == 0)
    return not_found("no experiment " + std::to_string(id) + " in " + path_);
  DTRAIN_RETURN_IF_ERROR(t.commit());
  std::lock_guard<std::mutex> queue_lock(queue_mutex_);
  unsynced_ = true;
  return status::ok();
}

// ---------------------------------------------------------------------------
// Reads

template <class Row, class Bind>
result<std::vector<Row>> sqlite_store::select(const std::string& sql, const Bind& bind,
                                              Row (*read)(const sqlite::statement&)) {
  if (writer_)
    wait_for_writes();
  std::lock_guard<std::mutex> lock(read_mutex_);
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement s, reader_.prepare(sql));
  bind(s);
  std::vector<Row> out;
  for (;;) {
    DTRAIN_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row)
      return out;
    out.push_back(read(s));
  }
}

result<experiment_row> sqlite_store::experiment(int64_t id) {
  DTRAIN_ASSIGN_OR_RETURN(
      std::vector<experiment_row> found,
      select(std::string("SELECT ") + rows::experiment_columns + " FROM experiments WHERE id = ?1",
             [&](sqlite::statement& s) { s.bind(1, id); }, rows::read_experiment));
  if (found.empty())
    return not_found("no experiment " + std::to_string(id) + " in " + path_);
  return std::move(found.front());
}

result<std::vector<experiment_row>> sqlite_store::experiments() {
  return select(std::string("SELECT ") + rows::experiment_columns + " FROM experiments ORDER BY id",
                [](sqlite::statement&) {}, rows::read_experiment);
}

result<std::vector<trial_row>> sqlite_store::trials(int64_t experiment) {
  return select(std::string("SELECT ") + rows::trial_columns +
                    " FROM trials WHERE experiment = ?1 ORDER BY seq_created, id",
                [&](sqlite::statement& s) { s.bind(1, experiment); }, rows::read_trial);
}

// `trial` "" = every trial. Two texts, not one with "?2 = '' OR": a
// trial's curve is then a range of the primary key, already in order.
result<std::vector<metric_row>> sqlite_store::metrics(int64_t experiment,
                                                      const std::string& trial) {
  const std::string from = std::string("SELECT ") + rows::metric_columns + " FROM metrics ";
  if (trial.empty())
    return select(from + "WHERE experiment = ?1 ORDER BY seq, name, trial",
                  [&](sqlite::statement& s) { s.bind(1, experiment); }, rows::read_metric);
  return select(from + "WHERE experiment = ?1 AND trial = ?2 ORDER BY seq, name",
                [&](sqlite::statement& s) { s.bind(1, experiment).bind(2, trial); },
                rows::read_metric);
}

result<std::vector<checkpoint_row>> sqlite_store::checkpoints(int64_t experiment,
                                                              const std::string& trial) {
  return select(std::string("SELECT ") + rows::checkpoint_columns +
                    " FROM checkpoints WHERE experiment = ?1 AND (?2 = '' OR trial = ?2)"
                    " ORDER BY seq, path",
                [&](sqlite::statement& s) { s.bind(1, experiment).bind(2, trial); },
                rows::read_checkpoint);
}

result<std::vector<lineage_row>> sqlite_store::lineage(int64_t experiment) {
  return select(std::string("SELECT ") + rows::lineage_columns +
                    " FROM lineage WHERE experiment = ?1 ORDER BY seq, trial",
                [&](sqlite::statement& s) { s.bind(1, experiment); }, rows::read_lineage);
}

result<std::vector<event_row>> sqlite_store::events(int64_t experiment,
                                                    const std::string& trial) {
  if (version_ < schema::events_version) {
    // Opened read-only at version 2: no events, until a writer migrates the
    // file while this store is open.
    auto table = select<std::string>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'",
        [](sqlite::statement&) {}, +[](const sqlite::statement& s) { return s.text(0); });
    if (!table)
      return table.error();
    if (table->empty())
      return std::vector<event_row>{};
  }
  return select(std::string("SELECT ") + rows::event_columns +
                    " FROM events WHERE experiment = ?1 AND (?2 = '' OR trial = ?2)"
                    " ORDER BY seq, trial",
                [&](sqlite::statement& s) { s.bind(1, experiment).bind(2, trial); },
                rows::read_event);
}

} // namespace

namespace {

// Whether `path` exists; a missing one is not_found when read-only, else
// its directory is created.
result<bool> existing(const std::string& path, const sqlite_options& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec)
    return os_error("stat", path, ec.value());
  if (exists)
    return true;
  if (o.read_only)
    return not_found(path + ": no experiment store there (no such file)");
  const std::string parent = parent_of(path);
  fs::create_directories(parent, ec);
  if (ec)
    return os_error("create the directory", parent, ec.value());
  return false;
}

// Read-only reads the current schema and version 2 (whose only lack, the
// events table, reads as empty); an older one lacks tables and columns the
// reads name, and migrating is a write.
status readable_read_only(const std::string& path, int version) {
  if (version == 0)
    return invalid_argument(path + " holds no experiment store yet (an empty database)");
  if (version < schema::oldest_readable_version)
    return invalid_argument(path + " has schema version " + std::to_string(version) +
                            "; read-only, this dtrain reads versions " +
                            std::to_string(schema::oldest_readable_version) + " to " +
                            std::to_string(schema::current_version) +
                            ": open it once with a writer (dtrain train or dtrain tune) "
                            "to migrate it");
  return status::ok();
}

} // namespace

result<std::unique_ptr<experiment_store>> open_sqlite_store(const std::string& path,
                                                            const sqlite_options& o) {
  DTRAIN_ASSIGN_OR_RETURN(const bool exists, existing(path, o));
  // Everything that can refuse a file is checked before anything writes
  // to it (setting WAL mode writes the header): refused files stay as
  // they were, byte for byte.
  int version = 0;
  if (exists) {
    DTRAIN_ASSIGN_OR_RETURN(version, schema::inspect(path, o.busy_timeout_ms));
  }
  std::optional<writer> w;
  if (o.read_only) {
    DTRAIN_RETURN_IF_ERROR(readable_read_only(path, version));
  } else {
    DTRAIN_ASSIGN_OR_RETURN(writer opened, writer::open(path, o));
    w.emplace(std::move(opened));
  }
  DTRAIN_ASSIGN_OR_RETURN(
      sqlite::connection reader,
      sqlite::connection::open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                               o.busy_timeout_ms));
  if (!exists) {
    // The new file's name in its directory survives a crash.
    DTRAIN_RETURN_IF_ERROR(sync_directory(parent_of(path)));
  }
  return std::unique_ptr<experiment_store>(
      std::make_unique<sqlite_store>(path, o, std::move(w), std::move(reader),
                                     o.read_only ? version : schema::current_version));
}

} // namespace dtrain::experiments
