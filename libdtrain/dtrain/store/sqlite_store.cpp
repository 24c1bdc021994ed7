// The SQLite experiment store: one writer thread that commits queued
// writes in batches on its own connection, reads on a second, read-only
// connection. See experiment_store.hpp for the contract.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <variant>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/store/experiment_store.hpp"
#include "dtrain/store/sqlite.hpp"
#include "dtrain/store/sqlite_rows.hpp"
#include "dtrain/store/sqlite_schema.hpp"

namespace dtrain::store {

int sqlite_schema_version() { return schema::current_version; }

namespace {

using clock_type = std::chrono::steady_clock;

// A write waiting for the writer thread: a copy of its rows.
using queued_write =
    std::variant<trial_row, std::vector<metric_row>, checkpoint_row, lineage_row, event_row>;

// The queue commits at once when it holds this many writes, whatever
// batch_ms says: a transaction's size stays bounded when writes come
// faster than batch_ms.
constexpr size_t max_batch = 20000;
// Writes wait (rather than grow memory without bound) while this many are
// queued behind the transaction in progress: a producer faster than
// SQLite for long is slowed to its pace. The tuner, at about 46,000
// results/s with the store, stays far below it.
constexpr size_t max_queued = 16 * max_batch;

/// The writer connection and its statements, prepared once.
struct writer {
  sqlite::connection db;
  sqlite::statement put_trial, add_metric, put_checkpoint, add_lineage, add_event;

  static result<writer> open(const std::string& path, const sqlite_options& o);
  status apply(const queued_write& w);
  // batch[first, last) in one transaction.
  status apply_all(const std::vector<queued_write>& batch, size_t first, size_t last);
};

result<writer> writer::open(const std::string& path, const sqlite_options& o) {
  DTRAIN_ASSIGN_OR_RETURN(
      sqlite::connection db,
      sqlite::connection::open(path,
                               SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                               o.busy_timeout_ms));
  // WAL: readers (other processes too) never wait for the writer, nor it
  // for them. NORMAL: a commit survives a crash of the process, not of the
  // machine; flush() makes it durable (see sqlite_store::flush).
  DTRAIN_RETURN_IF_ERROR(db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
                                 "PRAGMA foreign_keys = ON"));
  DTRAIN_RETURN_IF_ERROR(schema::migrate(db));
  writer w{std::move(db), {}, {}, {}, {}, {}};
  DTRAIN_ASSIGN_OR_RETURN(w.put_trial, w.db.prepare(rows::put_trial));
  DTRAIN_ASSIGN_OR_RETURN(w.add_metric, w.db.prepare(rows::add_metric));
  DTRAIN_ASSIGN_OR_RETURN(w.put_checkpoint, w.db.prepare(rows::put_checkpoint));
  DTRAIN_ASSIGN_OR_RETURN(w.add_lineage, w.db.prepare(rows::add_lineage));
  DTRAIN_ASSIGN_OR_RETURN(w.add_event, w.db.prepare(rows::add_event));
  return w;
}

status writer::apply(const queued_write& w) {
  auto run = [](sqlite::statement& s, const auto& row) {
    rows::bind(s, row);
    return s.run();
  };
  if (const auto* t = std::get_if<trial_row>(&w))
    return run(put_trial, *t);
  if (const auto* c = std::get_if<checkpoint_row>(&w))
    return run(put_checkpoint, *c);
  if (const auto* l = std::get_if<lineage_row>(&w))
    return run(add_lineage, *l);
  if (const auto* e = std::get_if<event_row>(&w))
    return run(add_event, *e);
  for (const metric_row& m : std::get<std::vector<metric_row>>(w))
    DTRAIN_RETURN_IF_ERROR(run(add_metric, m));
  return status::ok();
}

status writer::apply_all(const std::vector<queued_write>& batch, size_t first, size_t last) {
  DTRAIN_ASSIGN_OR_RETURN(sqlite::transaction t, sqlite::transaction::begin(db));
  for (size_t i = first; i < last; ++i)
    DTRAIN_RETURN_IF_ERROR(apply(batch[i]));
  return t.commit();
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

  status put_trial(const trial_row& t) override { return enqueue(t); }
  result<std::vector<trial_row>> trials(int64_t experiment) override;
  status add_metrics(const std::vector<metric_row>& rows) override;
  result<std::vector<metric_row>> metrics(int64_t experiment, const std::string& trial) override;
  status put_checkpoint(const checkpoint_row& c) override { return enqueue(c); }
  result<std::vector<checkpoint_row>> checkpoints(int64_t experiment,
                                                  const std::string& trial) override;
  status add_lineage(const lineage_row& l) override { return enqueue(l); }
  result<std::vector<lineage_row>> lineage(int64_t experiment) override;
  status add_event(const event_row& e) override { return enqueue(e); }
  result<std::vector<event_row>> events(int64_t experiment, const std::string& trial) override;

  status flush() override;
  std::string where() const override { return path_; }

private:
  status enqueue(queued_write w);
  /// Blocks until every write accepted so far is committed (visible, not
  /// yet durable). For a write, the kept write error if there is one.
  status wait_for_writes(bool for_a_write);
  void writer_loop();
  status commit(const std::vector<queued_write>& batch);
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
  // enqueue, committed_ once their transaction ended (well or not),
  // wanted_ the count a waiter needs committed now.
  std::mutex queue_mutex_;
  std::condition_variable queue_changed_, committed_changed_;
  std::vector<queued_write> queue_;
  clock_type::time_point first_queued_;
  uint64_t accepted_ = 0, committed_ = 0, wanted_ = 0;
  status error_;           // the first write error since the last flush
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
  writer_thread_.join();
}

// ---------------------------------------------------------------------------
// Writes

status sqlite_store::enqueue(queued_write w) {
  if (!writer_)
    return read_only_error();
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (queue_.size() >= max_queued) {
    queue_changed_.notify_one();
    committed_changed_.wait(lock, [&] { return stopping_ || queue_.size() < max_queued; });
  }
  if (!error_.is_ok())
    return error_;
  if (queue_.empty())
    first_queued_ = clock_type::now();
  queue_.push_back(std::move(w));
  ++accepted_;
  if (queue_.size() == 1 || queue_.size() >= max_batch)
    queue_changed_.notify_one();
  return status::ok();
}

status sqlite_store::add_metrics(const std::vector<metric_row>& rows) {
  return rows.empty() ? status::ok() : enqueue(rows);
}

void sqlite_store::writer_loop() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  for (;;) {
    queue_changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;  // stopping, and everything is committed
    queue_changed_.wait_until(
        lock, first_queued_ + std::chrono::milliseconds(options_.batch_ms), [&] {
          return stopping_ || wanted_ > committed_ || queue_.size() >= max_batch;
        });
    std::vector<queued_write> batch;
    batch.swap(queue_);
    const uint64_t upto = accepted_;
    lock.unlock();
    const status s = commit(batch);
    lock.lock();
    if (!s.is_ok() && error_.is_ok())
      error_ = s;
    committed_ = upto;
    unsynced_ = true;
    committed_changed_.notify_all();
  }
}

status sqlite_store::commit(const std::vector<queued_write>& batch) {
  std::lock_guard<std::mutex> lock(write_mutex_);
  const status all = writer_->apply_all(batch, 0, batch.size());
  // A write the database refuses (a constraint: a trial of an experiment
  // that does not exist) must not take the batch's other writes with it:
  // they go again, one transaction each, and the first error is kept.
  // Other errors (I/O, a lock held past busy_timeout) would only repeat.
  if (all.is_ok() || all.code() != error_code::invalid_argument || batch.size() == 1)
    return all;
  status first;
  for (size_t i = 0; i < batch.size(); ++i) {
    const status one = writer_->apply_all(batch, i, i + 1);
    if (!one.is_ok() && first.is_ok())
      first = one;
  }
  return first;
}

status sqlite_store::wait_for_writes(bool for_a_write) {
  if (!writer_)
    return for_a_write ? read_only_error() : status::ok();
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const uint64_t target = accepted_;
  if (committed_ < target) {
    wanted_ = std::max(wanted_, target);
    queue_changed_.notify_one();
    committed_changed_.wait(lock, [&] { return committed_ >= target; });
  }
  return for_a_write ? error_ : status::ok();
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

status sqlite_store::flush() {
  if (!writer_)
    return status::ok();
  DTRAIN_RETURN_IF_ERROR(wait_for_writes(false));
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const status kept = std::exchange(error_, status::ok());
  const bool sync = std::exchange(unsynced_, false);
  lock.unlock();
  if (sync) {
    const status s = sync_wal();
    if (!s.is_ok()) {
      lock.lock();
      unsynced_ = true;
      return kept.is_ok() ? s : kept;
    }
  }
  return kept;
}

result<int64_t> sqlite_store::create_experiment(const experiment_row& e) {
  DTRAIN_RETURN_IF_ERROR(wait_for_writes(true));
  std::lock_guard<std::mutex> lock(write_mutex_);
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement s, writer_->db.prepare(rows::insert_experiment));
  rows::bind(s, e);
  DTRAIN_RETURN_IF_ERROR(s.run());
  std::lock_guard<std::mutex> queue_lock(queue_mutex_);
  unsynced_ = true;
  return writer_->db.last_insert_id();
}

status sqlite_store::update_experiment(const experiment_row& e) {
  DTRAIN_RETURN_IF_ERROR(wait_for_writes(true));
  std::lock_guard<std::mutex> lock(write_mutex_);
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement s, writer_->db.prepare(rows::update_experiment));
  rows::bind(s, e);
  s.bind(14, e.id);
  DTRAIN_RETURN_IF_ERROR(s.run());
  if (writer_->db.changes() == 0)
    return not_found("no experiment " + std::to_string(e.id) + " in " + path_);
  std::lock_guard<std::mutex> queue_lock(queue_mutex_);
  unsynced_ = true;
  return status::ok();
}

status sqlite_store::delete_experiment(int64_t id) {
  DTRAIN_RETURN_IF_ERROR(wait_for_writes(true));
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
  DTRAIN_RETURN_IF_ERROR(wait_for_writes(false));
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

} // namespace dtrain::store
