#include "dtrain/experiments/sqlite_writer.hpp"

#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/experiments/sqlite_rows.hpp"
#include "dtrain/experiments/sqlite_schema.hpp"

namespace dtrain::experiments::sqlite {

const char* operation_of(const queued_write& w) {
  static const char* const names[] = {"put_trial", "add_metrics", "put_checkpoint", "add_lineage",
                                      "add_event"};
  return names[w.rows.index()];
}

bool transient(const status& s) {
  // sqlite::error: timeout for SQLITE_BUSY/LOCKED, io_error for I/O,
  // SQLITE_FULL, a read-only or unopenable file.
  return s.code() == error_code::timeout || s.code() == error_code::io_error;
}

result<writer> writer::open(const std::string& path, const sqlite_options& o) {
  DTRAIN_ASSIGN_OR_RETURN(
      connection db,
      connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
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
  auto run = [](statement& s, const auto& row) {
    rows::bind(s, row);
    return s.run();
  };
  if (const auto* t = std::get_if<trial_row>(&w.rows))
    return run(put_trial, *t);
  if (const auto* c = std::get_if<checkpoint_row>(&w.rows))
    return run(put_checkpoint, *c);
  if (const auto* l = std::get_if<lineage_row>(&w.rows))
    return run(add_lineage, *l);
  if (const auto* e = std::get_if<event_row>(&w.rows))
    return run(add_event, *e);
  for (const metric_row& m : std::get<std::vector<metric_row>>(w.rows))
    DTRAIN_RETURN_IF_ERROR(run(add_metric, m));
  return status::ok();
}

status writer::apply_all(const std::vector<queued_write>& batch, size_t first, size_t last) {
  DTRAIN_ASSIGN_OR_RETURN(transaction t, transaction::begin(db));
  for (size_t i = first; i < last; ++i)
    DTRAIN_RETURN_IF_ERROR(apply(batch[i]));
  return t.commit();
}

status writer::explain(const queued_write& w, const status& s) {
  const std::string id = std::to_string(w.experiment);
  const std::string context = std::string(operation_of(w)) + " for experiment " + id;
  if (s.code() == error_code::invalid_argument) {
    // The usual constraint: the experiment is gone (`dtrain experiments
    // delete` of a running one). Say so rather than "FOREIGN KEY".
    auto rows = db.integer("SELECT count(*) FROM experiments WHERE id = " + id);
    if (rows && *rows == 0)
      return not_found(context + ": no experiment " + id + " in " + db.path() +
                       " (deleted while it was still being written?)");
  }
  return s.with_context(context);
}

commit_outcome writer::commit(const std::vector<queued_write>& batch) {
  commit_outcome out;
  const status all = apply_all(batch, 0, batch.size());
  if (all.is_ok())
    return out;
  // Other errors than a refused write (I/O, a lock held past busy_timeout)
  // would only repeat for each write: the batch failed as a whole.
  if (all.code() != error_code::invalid_argument || batch.size() == 1) {
    if (batch.size() == 1 && !transient(all))
      out.refused.emplace_back(0, explain(batch[0], all));
    else
      out.batch = all;
    return out;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const status one = apply_all(batch, i, i + 1);
    if (!one.is_ok())
      out.refused.emplace_back(i, transient(one) ? one : explain(batch[i], one));
  }
  return out;
}

} // namespace dtrain::experiments::sqlite
