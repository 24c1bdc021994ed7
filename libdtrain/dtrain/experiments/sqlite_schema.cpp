#include "dtrain/experiments/sqlite_schema.hpp"

#include <vector>

#include "dtrain/core/check.hpp"

namespace dtrain::experiments::schema {

namespace {

// Doubles live in ANY columns of STRICT tables: SQLite keeps their bits
// as written (a REAL column stores integral values as integers and so
// loses -0.0), and NaN, which SQLite cannot hold, is stored as NULL (see
// sqlite::statement): those columns alone allow NULL.
//
// Every table's key starts with the experiment: one experiment's rows are
// one index range (reads, and delete_experiment), and the foreign keys
// to experiments(id) are checked through those keys.

// Version 1: experiments, trials, metrics and checkpoints. Compared with
// version 2 it has no `lineage` table and no trials.end_how column.
// History: never edit it, a file written by it may exist anywhere.
const char* const version_1 = R"sql(
CREATE TABLE experiments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  configuration TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  storage TEXT NOT NULL,
  metric TEXT NOT NULL,
  minimize INTEGER NOT NULL,
  created_at ANY,
  updated_at ANY,
  ended_at ANY,
  owner TEXT NOT NULL,
  message TEXT NOT NULL
) STRICT;
CREATE TABLE trials (
  experiment INTEGER NOT NULL REFERENCES experiments (id),
  id TEXT NOT NULL,
  seq_created INTEGER NOT NULL,
  hyperparameters TEXT NOT NULL,
  state TEXT NOT NULL,
  restarts INTEGER NOT NULL,
  error TEXT NOT NULL,
  best ANY,
  last ANY,
  epochs INTEGER NOT NULL,
  checkpoint_dir TEXT NOT NULL,
  seq_ended INTEGER NOT NULL,
  started_at ANY,
  ended_at ANY,
  PRIMARY KEY (experiment, id)
) STRICT, WITHOUT ROWID;
CREATE TABLE metrics (
  experiment INTEGER NOT NULL REFERENCES experiments (id),
  trial TEXT NOT NULL,
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  value ANY,
  time ANY,
  PRIMARY KEY (experiment, trial, seq, name)
) STRICT, WITHOUT ROWID;
CREATE TABLE checkpoints (
  experiment INTEGER NOT NULL REFERENCES experiments (id),
  path TEXT NOT NULL,
  trial TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  metric ANY,
  valid INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  time ANY,
  PRIMARY KEY (experiment, path)
) STRICT, WITHOUT ROWID;
CREATE INDEX checkpoints_by_seq ON checkpoints (experiment, seq);
)sql";

// Version 1 -> 2: PBT's lineage, and how a trial ended.
const char* const version_1_to_2 = R"sql(
ALTER TABLE trials ADD COLUMN end_how TEXT NOT NULL DEFAULT '';
CREATE TABLE lineage (
  experiment INTEGER NOT NULL REFERENCES experiments (id),
  seq INTEGER NOT NULL,
  trial TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  source TEXT NOT NULL,
  source_epoch INTEGER NOT NULL,
  hyperparameters_before TEXT NOT NULL,
  hyperparameters_after TEXT NOT NULL,
  time ANY,
  PRIMARY KEY (experiment, seq, trial)
) STRICT, WITHOUT ROWID;
)sql";

// Version 2 -> 3: the trainer's events (failures, recoveries) per trial.
const char* const version_2_to_3 = R"sql(
CREATE TABLE events (
  experiment INTEGER NOT NULL REFERENCES experiments (id),
  seq INTEGER NOT NULL,
  trial TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  time ANY,
  kind TEXT NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (experiment, seq, trial)
) STRICT, WITHOUT ROWID;
)sql";

// steps[v] takes a database from version v to v + 1 (version 0: empty).
const std::vector<const char*> steps = {version_1, version_1_to_2, version_2_to_3};
static_assert(current_version == 3, "add the step to the new version to `steps`");

status newer_version(const std::string& path, int64_t version) {
  return invalid_argument(path + " has schema version " + std::to_string(version) +
                          "; this dtrain reads versions up to " +
                          std::to_string(current_version) + " (a newer dtrain wrote it)");
}

} // namespace

result<int> inspect(const std::string& path, int busy_timeout_ms) {
  DTRAIN_ASSIGN_OR_RETURN(
      sqlite::connection c,
      sqlite::connection::open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, busy_timeout_ms));
  // The first read of the header: a file that is not a database fails here.
  auto version = c.integer("PRAGMA user_version");
  if (!version)
    return version.error().code() == error_code::corrupt_data
               ? corrupt_data(path + " is not an SQLite database or is damaged (" +
                              version.error().message() + ")")
               : version.error();
  DTRAIN_ASSIGN_OR_RETURN(sqlite::statement check, c.prepare("PRAGMA quick_check"));
  auto row = check.step();
  if (!row)
    return row.error().code() == error_code::corrupt_data
               ? corrupt_data(path + " fails its integrity check (" + row.error().message() + ")")
               : row.error();
  if (*row && check.text(0) != "ok")
    return corrupt_data(path + " fails its integrity check: " + check.text(0));
  if (*version > current_version)
    return newer_version(path, *version);
  if (*version == 0) {
    DTRAIN_ASSIGN_OR_RETURN(int64_t tables,
                            c.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"));
    if (tables > 0)
      return invalid_argument(path + " is an SQLite database but not a dtrain experiment store "
                              "(it has tables and no schema version)");
  }
  return static_cast<int>(*version);
}

status migrate(sqlite::connection& c) {
  DTRAIN_ASSIGN_OR_RETURN(sqlite::transaction t, sqlite::transaction::begin(c));
  // Read again under the write lock: another process may have migrated
  // the file since inspect().
  DTRAIN_ASSIGN_OR_RETURN(int64_t version, c.integer("PRAGMA user_version"));
  if (version > current_version)
    return newer_version(c.path(), version);
  if (version == current_version)
    return status::ok();
  for (size_t v = static_cast<size_t>(version); v < steps.size(); ++v)
    DTRAIN_RETURN_IF_ERROR(c.exec(steps[v]).with_context(
        "migrating the experiment store to schema version " + std::to_string(v + 1)));
  DTRAIN_RETURN_IF_ERROR(c.exec("PRAGMA user_version = " + std::to_string(current_version)));
  return t.commit();
}

} // namespace dtrain::experiments::schema
