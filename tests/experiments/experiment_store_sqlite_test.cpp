// The SQLite experiment store (store/experiment_store.hpp): every row type
// round trips (non-finite doubles, -0.0, quotes and UTF-8 included), ids are
// never reused, delete leaves no row behind, version-1 and version-2 files
// are migrated (and a version-2 file reads read-only, without events),
// refused files (newer schema, not a database, truncated) are left byte for
// byte, readers in other store objects and in another process never fail
// while a writer writes, and a write error surfaces at flush() of its own
// experiment, refuses no other write, and a lock held for a while is
// outlasted by trying again.
#include <boost/test/unit_test.hpp>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/write_errors.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::experiments;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using dtrain::testing::write_file;
namespace fs = std::filesystem;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

// Bit-equal, or both NaN (a NaN's payload is not kept).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::unique_ptr<experiment_store> open_or_die(const std::string& path, sqlite_options o = {}) {
  auto s = open_sqlite_store(path, o);
  BOOST_REQUIRE_MESSAGE(s.is_ok(), s.error().to_string());
  return std::move(s).value();
}

experiment_row sample_experiment(const std::string& name) {
  experiment_row e;
  e.name = name;
  e.kind = "tune";
  e.configuration = "name: \"q'uote\"\nlr: 0.1\n";
  e.config_hash = "0123456789abcdef";
  e.storage = "/tmp/ckpt";
  e.metric = "validation_accuracy";
  e.minimize = true;
  e.created_at = 1700000000.25;
  e.updated_at = 1700000001.5;
  e.owner = "host 42";
  return e;
}

trial_row sample_trial(int64_t experiment, const std::string& id) {
  trial_row t;
  t.experiment = experiment;
  t.id = id;
  t.seq_created = 1;
  t.hyperparameters = R"({"lr": 0.1, "opt": "ad\"am"})";
  t.state = "running";
  return t;
}

// One report: four metric rows and the trial's update, as the tuner writes.
void write_report(experiment_store& s, trial_row& t, int64_t seq) {
  std::vector<metric_row> rows;
  for (const char* name : {"loss", "accuracy", "validation_loss", "validation_accuracy"})
    rows.push_back({t.experiment, t.id, seq, name, 0.5 + static_cast<double>(seq), seq, 1.0});
    // fields: experiment, trial, epoch, name, value, seq, time
  BOOST_REQUIRE(s.add_metrics(rows).is_ok());
  t.epochs = seq;
  t.last = 0.5 + static_cast<double>(seq);
  BOOST_REQUIRE(s.put_trial(t).is_ok());
}

// Runs SQL on the file directly, outside the store.
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  BOOST_CHECK_MESSAGE(rc == SQLITE_OK, (message != nullptr ? message : "?") << " in " << sql);
  sqlite3_free(message);
  sqlite3_close(db);
}

int64_t raw_count(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* s = nullptr;
  BOOST_REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

// The version-1 schema as dtrain wrote it: a frozen copy (not the store's
// own text), so that an edit of the history in the store shows here.
const char* const version_1_ddl = R"sql(
CREATE TABLE experiments (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
  kind TEXT NOT NULL, configuration TEXT NOT NULL, config_hash TEXT NOT NULL,
  state TEXT NOT NULL, storage TEXT NOT NULL, metric TEXT NOT NULL, minimize INTEGER NOT NULL,
  created_at ANY, updated_at ANY, ended_at ANY, owner TEXT NOT NULL, message TEXT NOT NULL) STRICT;
CREATE TABLE trials (experiment INTEGER NOT NULL REFERENCES experiments (id), id TEXT NOT NULL,
  seq_created INTEGER NOT NULL, hyperparameters TEXT NOT NULL, state TEXT NOT NULL,
  restarts INTEGER NOT NULL, error TEXT NOT NULL, best ANY, last ANY, epochs INTEGER NOT NULL,
  checkpoint_dir TEXT NOT NULL, seq_ended INTEGER NOT NULL, started_at ANY, ended_at ANY,
  PRIMARY KEY (experiment, id)) STRICT, WITHOUT ROWID;
CREATE TABLE metrics (experiment INTEGER NOT NULL REFERENCES experiments (id),
  trial TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, epoch INTEGER NOT NULL,
  value ANY, time ANY, PRIMARY KEY (experiment, trial, seq, name)) STRICT, WITHOUT ROWID;
CREATE TABLE checkpoints (experiment INTEGER NOT NULL REFERENCES experiments (id),
  path TEXT NOT NULL, trial TEXT NOT NULL, epoch INTEGER NOT NULL, metric ANY,
  valid INTEGER NOT NULL, seq INTEGER NOT NULL, time ANY,
  PRIMARY KEY (experiment, path)) STRICT, WITHOUT ROWID;
CREATE INDEX checkpoints_by_seq ON checkpoints (experiment, seq);
PRAGMA user_version = 1;
)sql";

// Version 1 -> 2 as dtrain wrote it (frozen too): run after version_1_ddl.
const char* const version_2_ddl = R"sql(
ALTER TABLE trials ADD COLUMN end_how TEXT NOT NULL DEFAULT '';
CREATE TABLE lineage (experiment INTEGER NOT NULL REFERENCES experiments (id),
  seq INTEGER NOT NULL, trial TEXT NOT NULL, epoch INTEGER NOT NULL, source TEXT NOT NULL,
  source_epoch INTEGER NOT NULL, hyperparameters_before TEXT NOT NULL,
  hyperparameters_after TEXT NOT NULL, time ANY,
  PRIMARY KEY (experiment, seq, trial)) STRICT, WITHOUT ROWID;
PRAGMA user_version = 2;
)sql";

// A version-2 file with one experiment, a trial and its checkpoint.
void write_version_2_file(const std::string& path) {
  raw_exec(path, version_1_ddl);
  raw_exec(path, version_2_ddl);
  raw_exec(path, R"sql(
    INSERT INTO experiments VALUES (1, 'old', 'train', 'c', 'h', 'completed', '', 'loss', 1,
                                    10.0, 11.0, 12.0, '', '');
    INSERT INTO trials VALUES (1, '00000', 1, '{}', 'terminated', 1, '', 0.25, NULL,
                               3, '/ck', 6, 1.0, 2.0, 'completed');
    INSERT INTO checkpoints VALUES (1, '/ck/3', '00000', 3, NULL, 1, 5, 1.5);
  )sql");
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiment_store_sqlite)

BOOST_AUTO_TEST_CASE(every_row_type_round_trips_with_non_finite_values_and_unicode) {
  temp_dir dir;
  const std::string path = dir.file("home/experiments.db");  // the directory is created
  const std::string odd = "d\"é'\\ 日本\n\t\x01 end";
  experiment_row e = sample_experiment(odd);
  e.message = odd;
  e.ended_at = -0.0;
  trial_row t = sample_trial(0, "00001");
  t.error = odd;
  t.best = not_a_number;
  t.last = inf;
  t.started_at = -inf;
  t.ended_at = 4.9e-324;  // the smallest denormal
  t.restarts = 3;
  t.end_how = "stopped";
  t.seq_ended = 9;
  const std::vector<double> values = {not_a_number, inf, -inf, -0.0, 0.1, 1e-300, 4.9e-324, -1.5};
  {
    auto s = open_or_die(path);
    BOOST_REQUIRE_EQUAL(s->create_experiment(e).value(), 1);
    e.id = 1;
    t.experiment = 1;
    BOOST_REQUIRE(s->put_trial(t).is_ok());
    std::vector<metric_row> rows;
    for (size_t i = 0; i < values.size(); ++i)
      rows.push_back({1, t.id, static_cast<int64_t>(i), "m" + std::to_string(i) + odd, values[i],
                      static_cast<int64_t>(i / 2), 0.5 * static_cast<double>(i)});
    BOOST_REQUIRE(s->add_metrics(rows).is_ok());
    BOOST_REQUIRE(s->put_checkpoint({1, t.id, 4, "/ck/\"x\"", not_a_number, false, 5, -inf}).is_ok());
    BOOST_REQUIRE(s->add_lineage({1, t.id, 6, 4, "00002", 3, R"({"lr": 0.1})", odd, inf}).is_ok());
    // fields: experiment, trial, seq, epoch, time, kind, message
    BOOST_REQUIRE(s->add_event({1, t.id, 8, 2, -0.0, "recovered", odd}).is_ok());
    BOOST_REQUIRE(s->add_event({1, t.id, 7, 2, not_a_number, "failure", "node 1 died"}).is_ok());
    BOOST_REQUIRE(s->add_event({1, "00002", 9, 0, 1.25, "gave_up", "too many"}).is_ok());
    BOOST_REQUIRE(s->flush().is_ok());
  }
  auto s = open_or_die(path, {true});  // read back from the file, read-only
  const experiment_row got = s->experiment(1).value();
  BOOST_TEST(got.name == odd);
  BOOST_TEST(got.message == odd);
  BOOST_TEST(got.configuration == e.configuration);
  BOOST_TEST(got.kind == "tune");
  BOOST_TEST(got.minimize);
  BOOST_TEST(got.owner == "host 42");
  BOOST_TEST(same(got.created_at, e.created_at));
  BOOST_TEST(same(got.ended_at, -0.0));
  const auto trials = s->trials(1).value();
  BOOST_REQUIRE_EQUAL(trials.size(), 1u);
  BOOST_TEST(trials[0].error == odd);
  BOOST_TEST(trials[0].hyperparameters == t.hyperparameters);
  BOOST_TEST(std::isnan(trials[0].best));
  BOOST_TEST(same(trials[0].last, inf));
  BOOST_TEST(same(trials[0].started_at, -inf));
  BOOST_TEST(same(trials[0].ended_at, 4.9e-324));
  BOOST_TEST(trials[0].restarts == 3);
  BOOST_TEST(trials[0].end_how == "stopped");
  BOOST_TEST(trials[0].seq_ended == 9);
  const auto metrics = s->metrics(1, t.id).value();
  BOOST_REQUIRE_EQUAL(metrics.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {  // by seq, then name: the order written
    BOOST_TEST(metrics[i].name == "m" + std::to_string(i) + odd);
    BOOST_TEST(same(metrics[i].value, values[i]), "metric " << i << ": " << metrics[i].value);
    BOOST_TEST(metrics[i].epoch == static_cast<int64_t>(i));
    BOOST_TEST(same(metrics[i].time, 0.5 * static_cast<double>(i)));
  }
  BOOST_TEST(s->metrics(1).value().size() == values.size());
  BOOST_TEST(s->metrics(1, "00009").value().empty());
  const auto checkpoints = s->checkpoints(1).value();
  BOOST_REQUIRE_EQUAL(checkpoints.size(), 1u);
  BOOST_TEST(checkpoints[0].path == "/ck/\"x\"");
  BOOST_TEST(std::isnan(checkpoints[0].metric));
  BOOST_TEST(!checkpoints[0].valid);
  BOOST_TEST(same(checkpoints[0].time, -inf));
  const auto lineage = s->lineage(1).value();
  BOOST_REQUIRE_EQUAL(lineage.size(), 1u);
  BOOST_TEST(lineage[0].source == "00002");
  BOOST_TEST(lineage[0].source_epoch == 3);
  BOOST_TEST(lineage[0].epoch == 4);
  BOOST_TEST(lineage[0].after == odd);
  BOOST_TEST(same(lineage[0].time, inf));
  const auto events = s->events(1, t.id).value();  // by seq, not as written
  BOOST_REQUIRE_EQUAL(events.size(), 2u);
  BOOST_TEST(events[0].seq == 7);
  BOOST_TEST(events[0].kind == "failure");
  BOOST_TEST(events[0].message == "node 1 died");
  BOOST_TEST(events[0].epoch == 2);
  BOOST_TEST(std::isnan(events[0].time));
  BOOST_TEST(events[1].seq == 8);
  BOOST_TEST(events[1].trial == t.id);
  BOOST_TEST(events[1].kind == "recovered");
  BOOST_TEST(events[1].message == odd);
  BOOST_TEST(same(events[1].time, -0.0));
  const auto all = s->events(1).value();
  BOOST_REQUIRE_EQUAL(all.size(), 3u);
  BOOST_TEST(all[2].trial == "00002");
  BOOST_TEST(all[2].kind == "gave_up");
  BOOST_TEST(s->events(1, "00009").value().empty());
  BOOST_TEST(s->events(2).value().empty());
}

BOOST_AUTO_TEST_CASE(a_put_replaces_the_row_with_the_same_key) {
  temp_dir dir;
  auto s = open_or_die(dir.file("experiments.db"));
  const int64_t id = s->create_experiment(sample_experiment("a")).value();
  trial_row t = sample_trial(id, "00001");
  BOOST_REQUIRE(s->put_trial(t).is_ok());
  t.state = "terminated";
  t.best = 0.75;
  BOOST_REQUIRE(s->put_trial(t).is_ok());
  BOOST_REQUIRE(s->put_checkpoint({id, t.id, 1, "/c/1", 0.5, true, 2, 0}).is_ok());
  BOOST_REQUIRE(s->put_checkpoint({id, t.id, 1, "/c/1", 0.5, false, 2, 0}).is_ok());
  const auto trials = s->trials(id).value();
  BOOST_REQUIRE_EQUAL(trials.size(), 1u);
  BOOST_TEST(trials[0].state == "terminated");
  BOOST_TEST(trials[0].best == 0.75);
  const auto checkpoints = s->checkpoints(id, t.id).value();
  BOOST_REQUIRE_EQUAL(checkpoints.size(), 1u);
  BOOST_TEST(!checkpoints[0].valid);

  experiment_row e = s->experiment(id).value();
  e.state = "completed";
  e.ended_at = 5;
  BOOST_REQUIRE(s->update_experiment(e).is_ok());
  BOOST_TEST(s->experiment(id)->state == "completed");
  e.id = 77;
  const status missing = s->update_experiment(e);
  BOOST_TEST(missing.code() == error_code::not_found);
  BOOST_TEST(missing.message().find("77") != std::string::npos, missing.message());
}

BOOST_AUTO_TEST_CASE(ids_increase_and_are_never_reused_after_a_delete) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  {
    auto s = open_or_die(path);
    for (int64_t want = 1; want <= 3; ++want)
      BOOST_TEST(s->create_experiment(sample_experiment("e")).value() == want);
    BOOST_REQUIRE(s->delete_experiment(3).is_ok());
    BOOST_TEST(s->create_experiment(sample_experiment("e")).value() == 4);
    BOOST_REQUIRE(s->delete_experiment(4).is_ok());
  }
  auto s = open_or_die(path);
  BOOST_TEST(s->create_experiment(sample_experiment("e")).value() == 5);
  std::vector<int64_t> ids;
  const auto experiments = s->experiments().value();
  for (const experiment_row& e : experiments)
    ids.push_back(e.id);
  BOOST_TEST(ids == (std::vector<int64_t>{1, 2, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_delete_removes_the_experiment_s_rows_from_every_table_and_no_other) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  auto s = open_or_die(path);
  for (int i = 0; i < 2; ++i) {
    const int64_t id = s->create_experiment(sample_experiment("e")).value();
    trial_row t = sample_trial(id, "00001");
    write_report(*s, t, 1);
    BOOST_REQUIRE(s->put_checkpoint({id, t.id, 1, "/c", 0.5, true, 2, 0}).is_ok());
    BOOST_REQUIRE(s->add_lineage({id, t.id, 3, 1, "00002", 1, "{}", "{}", 0}).is_ok());
    BOOST_REQUIRE(s->add_event({id, t.id, 4, 1, 0, "failure", "x"}).is_ok());
  }
  BOOST_REQUIRE(s->delete_experiment(1).is_ok());
  const auto gone = s->experiment(1);
  BOOST_TEST(gone.error().code() == error_code::not_found);
  BOOST_TEST(gone.error().message() == "no experiment 1 in " + path);
  BOOST_TEST(s->delete_experiment(1).code() == error_code::not_found);
  BOOST_REQUIRE(s->flush().is_ok());
  for (const char* table : {"trials", "metrics", "checkpoints", "lineage", "events"}) {
    const std::string from = std::string("SELECT count(*) FROM ") + table;
    BOOST_TEST(raw_count(path, from + " WHERE experiment = 1") == 0, table);
    BOOST_TEST(raw_count(path, from + " WHERE experiment = 2") > 0, table);
  }
  BOOST_TEST(raw_count(path, "SELECT count(*) FROM experiments") == 1);
  BOOST_TEST(s->metrics(2).value().size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_version_1_file_is_migrated_and_keeps_its_rows) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  raw_exec(path, version_1_ddl);
  raw_exec(path, R"sql(
    INSERT INTO experiments VALUES (1, 'old', 'tune', 'c', 'h', 'completed', '', 'loss', 1,
                                    10.0, 11.0, 12.0, '', '');
    INSERT INTO trials VALUES (1, '00001', 1, '{"lr": 0.5}', 'terminated', 0, '', 0.25, NULL,
                               3, '/ck', 4, 1.0, 2.0);
    INSERT INTO metrics VALUES (1, '00001', 2, 'loss', 3, 0.25, 1.5);
    INSERT INTO checkpoints VALUES (1, '/ck/3', '00001', 3, 0.25, 1, 3, 1.5);
  )sql");
  auto s = open_or_die(path);
  BOOST_TEST(raw_count(path, "PRAGMA user_version") == sqlite_schema_version());
  BOOST_TEST(sqlite_schema_version() == 3);
  const experiment_row e = s->experiment(1).value();
  BOOST_TEST(e.name == "old");
  BOOST_TEST(e.minimize);
  BOOST_TEST(e.ended_at == 12.0);
  const auto trials = s->trials(1).value();
  BOOST_REQUIRE_EQUAL(trials.size(), 1u);
  BOOST_TEST(trials[0].end_how == "");  // the new column, defaulted
  BOOST_TEST(trials[0].best == 0.25);
  BOOST_TEST(std::isnan(trials[0].last));
  BOOST_TEST(trials[0].checkpoint_dir == "/ck");
  BOOST_TEST(s->metrics(1, "00001").value().at(0).value == 0.25);
  BOOST_TEST(s->checkpoints(1).value().at(0).path == "/ck/3");
  BOOST_REQUIRE(s->add_lineage({1, "00001", 5, 3, "00002", 2, "{}", "{}", 0}).is_ok());
  BOOST_TEST(s->lineage(1).value().size() == 1u);
  BOOST_TEST(s->events(1).value().empty());
  BOOST_REQUIRE(s->add_event({1, "00001", 6, 3, 2.5, "failure", "lost"}).is_ok());
  BOOST_TEST(s->events(1, "00001").value().at(0).message == "lost");
  BOOST_TEST(s->create_experiment(sample_experiment("new")).value() == 2);
}

BOOST_AUTO_TEST_CASE(a_version_2_file_reads_read_only_without_events_and_migrates_to_hold_them) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  write_version_2_file(path);
  const std::string before = read_file(path);
  {
    // A reader (the dashboard, `dtrain experiments`) of a file no writer
    // has migrated yet: everything reads, there are no events.
    auto s = open_or_die(path, {true});
    BOOST_TEST(s->trials(1).value().at(0).end_how == "completed");
    BOOST_TEST(s->checkpoints(1, "00000").value().at(0).path == "/ck/3");
    const auto events = s->events(1, "00000");
    BOOST_REQUIRE_MESSAGE(events.is_ok(), events.error().to_string());
    BOOST_TEST(events->empty());
  }
  BOOST_TEST(read_file(path) == before);
  BOOST_TEST(raw_count(path, "PRAGMA user_version") == 2);
  {
    auto s = open_or_die(path);
    BOOST_TEST(raw_count(path, "PRAGMA user_version") == 3);
    BOOST_TEST(s->trials(1).value().at(0).restarts == 1);
    BOOST_TEST(std::isnan(s->checkpoints(1).value().at(0).metric));
    BOOST_TEST(s->events(1).value().empty());
    BOOST_REQUIRE(s->add_event({1, "00000", 7, 3, 3.5, "failure", "replica 1 died"}).is_ok());
    BOOST_REQUIRE(s->add_event({1, "00000", 8, 3, 4.5, "recovered", "running again"}).is_ok());
    BOOST_REQUIRE(s->flush().is_ok());
  }
  auto s = open_or_die(path, {true});
  const auto events = s->events(1, "00000").value();
  BOOST_REQUIRE_EQUAL(events.size(), 2u);
  BOOST_TEST(events[0].kind == "failure");
  BOOST_TEST(events[1].kind == "recovered");
  BOOST_TEST(events[1].time == 4.5);
}

BOOST_AUTO_TEST_CASE(a_reader_opened_before_the_migration_sees_the_events_written_after_it) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  write_version_2_file(path);
  auto reader = open_or_die(path, {true});  // the dashboard, open for days
  BOOST_TEST(reader->events(1).value().empty());
  {
    auto writer = open_or_die(path);  // a new `dtrain tune` migrates the file
    BOOST_REQUIRE(writer->add_event({1, "00000", 7, 3, 3.5, "failure", "replica 1 died"}).is_ok());
    BOOST_REQUIRE(writer->flush().is_ok());
  }
  const auto events = reader->events(1, "00000");
  BOOST_REQUIRE_MESSAGE(events.is_ok(), events.error().to_string());
  BOOST_REQUIRE_EQUAL(events->size(), 1u);
  BOOST_TEST(events->at(0).message == "replica 1 died");
}

BOOST_AUTO_TEST_CASE(an_old_file_is_refused_read_only_with_a_way_out) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  raw_exec(path, version_1_ddl);
  const std::string before = read_file(path);
  const auto s = open_sqlite_store(path, {true});
  BOOST_TEST(s.error().code() == error_code::invalid_argument);
  BOOST_TEST(s.error().message().find("schema version 1") != std::string::npos,
             s.error().message());
  BOOST_TEST(s.error().message().find("open it once with a writer") != std::string::npos);
  BOOST_TEST(read_file(path) == before);
}

BOOST_AUTO_TEST_CASE(a_newer_schema_is_refused_and_the_file_left_as_it_was) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  {
    auto s = open_or_die(path);
    BOOST_REQUIRE(s->create_experiment(sample_experiment("e")).is_ok());
  }
  raw_exec(path, "PRAGMA user_version = 4");
  const std::string before = read_file(path);
  BOOST_REQUIRE(!before.empty());
  for (bool read_only : {false, true}) {
    const auto s = open_sqlite_store(path, {read_only});
    BOOST_TEST(s.error().code() == error_code::invalid_argument);
    BOOST_TEST(s.error().message() ==
               path + " has schema version 4; this dtrain reads versions up to 3 "
                      "(a newer dtrain wrote it)");
    BOOST_TEST(read_file(path) == before);
  }
}

BOOST_AUTO_TEST_CASE(files_that_are_not_a_sound_database_are_refused_and_left_as_they_were) {
  temp_dir dir;
  const std::string real = dir.file("real.db");
  {
    auto s = open_or_die(real);
    const int64_t id = s->create_experiment(sample_experiment("e")).value();
    trial_row t = sample_trial(id, "00001");
    for (int64_t seq = 1; seq <= 2000; ++seq)
      write_report(*s, t, seq);
  }
  const std::string database = read_file(real);
  BOOST_REQUIRE_GT(database.size(), 100000u);
  std::string garbage(4096, '\0');
  std::mt19937 random(7);
  for (char& c : garbage)
    c = static_cast<char>(random());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage", garbage},
      {"text", "name: not a database\n"},
      {"header", database.substr(0, 10)},
      {"first_page", database.substr(0, 4096)},
      {"half", database.substr(0, database.size() / 2)},
  };
  for (const auto& [name, bytes] : cases) {
    const std::string path = dir.file(name + ".db");
    write_file(path, bytes);
    for (bool read_only : {false, true}) {
      const auto s = open_sqlite_store(path, {read_only});
      BOOST_TEST(s.error().code() == error_code::corrupt_data, name << ": " << s.error().to_string());
      BOOST_TEST(s.error().message().find(path) != std::string::npos, s.error().message());
      BOOST_TEST(read_file(path) == bytes, name);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_sqlite_database_of_something_else_is_refused_and_left_as_it_was) {
  temp_dir dir;
  const std::string path = dir.file("other.db");
  raw_exec(path, "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
  const std::string before = read_file(path);
  for (bool read_only : {false, true}) {
    const auto s = open_sqlite_store(path, {read_only});
    BOOST_TEST(s.error().code() == error_code::invalid_argument);
    BOOST_TEST(s.error().message().find("not a dtrain experiment store") != std::string::npos,
               s.error().message());
    BOOST_TEST(read_file(path) == before);
  }
}

BOOST_AUTO_TEST_CASE(a_write_lock_held_past_busy_timeout_is_a_timeout_not_a_hang) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  sqlite_options o;
  o.busy_timeout_ms = 200;
  auto s = open_or_die(path, o);
  const int64_t id = s->create_experiment(sample_experiment("e")).value();
  sqlite3* other = nullptr;  // another writer, holding the write lock
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  const auto refused = s->create_experiment(sample_experiment("e"));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST(refused.error().code() == error_code::timeout, refused.error().to_string());
  BOOST_TEST(refused.error().message().find(path) != std::string::npos);
  BOOST_TEST(waited >= 0.15);
  BOOST_TEST(waited < 5.0);
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00001")).is_ok());
  BOOST_TEST(s->flush().code() == error_code::timeout);
  BOOST_TEST(s->trials(id).is_ok());  // reads never wait for the writer's lock
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  BOOST_TEST(s->create_experiment(sample_experiment("e")).is_ok());
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00001")).is_ok());
  BOOST_TEST(s->flush().is_ok());
  BOOST_TEST(s->trials(id).value().size() == 1u);
}

BOOST_AUTO_TEST_CASE(read_only_never_creates_a_missing_file_and_refuses_writes) {
  temp_dir dir;
  const std::string path = dir.file("sub/experiments.db");
  const auto missing = open_sqlite_store(path, {true});
  BOOST_TEST(missing.error().code() == error_code::not_found);
  BOOST_TEST(missing.error().message().find(path) != std::string::npos);
  BOOST_TEST(!fs::exists(dir.file("sub")));

  auto writer = open_or_die(path);
  BOOST_REQUIRE(writer->create_experiment(sample_experiment("e")).is_ok());
  auto reader = open_or_die(path, {true});
  BOOST_TEST(reader->experiments().value().size() == 1u);
  BOOST_TEST(reader->create_experiment(sample_experiment("e")).error().code() ==
             error_code::invalid_argument);
  BOOST_TEST(reader->put_trial(sample_trial(1, "00001")).code() == error_code::invalid_argument);
  BOOST_TEST(reader->flush().is_ok());
}

BOOST_AUTO_TEST_CASE(reads_see_every_accepted_write_before_its_batch_is_due) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  sqlite_options o;
  o.batch_ms = 600000;  // only a read, a flush or the destructor commits
  {
    auto s = open_or_die(path, o);
    const int64_t id = s->create_experiment(sample_experiment("e")).value();
    trial_row t = sample_trial(id, "00001");
    write_report(*s, t, 1);
    BOOST_TEST(s->metrics(id, t.id).value().size() == 4u);
    write_report(*s, t, 2);
  }  // no flush: the destructor commits
  auto s = open_or_die(path, {true});
  BOOST_TEST(s->metrics(1).value().size() == 8u);
  BOOST_TEST(s->trials(1).value().at(0).epochs == 2);
}

BOOST_AUTO_TEST_CASE(readers_never_fail_while_a_writer_writes) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  auto writer = open_or_die(path);
  const int64_t id = writer->create_experiment(sample_experiment("e")).value();
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, failures{0}, regressions{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      auto reader = open_sqlite_store(path, {true});
      if (!reader) {
        ++failures;
        return;
      }
      size_t seen = 0;
      while (!done) {
        const auto curve = (*reader)->metrics(id, "00003");
        const auto trials = (*reader)->trials(id);
        if (!curve || !trials) {
          ++failures;
          BOOST_TEST_MESSAGE("read failed: " << (curve ? trials.error() : curve.error()).to_string());
          continue;
        }
        if (curve->size() < seen)
          ++regressions;
        seen = curve->size();
        ++reads;
      }
    });
  std::vector<trial_row> trials;
  for (int i = 0; i < 10; ++i)
    trials.push_back(sample_trial(id, "0000" + std::to_string(i)));
  for (int64_t seq = 1; seq <= 20000; ++seq)
    write_report(*writer, trials[static_cast<size_t>(seq % 10)], seq);
  BOOST_REQUIRE(writer->flush().is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  done = true;
  for (std::thread& r : readers)
    r.join();
  BOOST_TEST(failures == 0);
  BOOST_TEST(regressions == 0);
  BOOST_TEST(reads > 2);
  BOOST_TEST(open_or_die(path, {true})->metrics(id, "00003").value().size() == 8000u);
}

// Another process: SQLite's locks between processes are the file's, not
// the ones it shares between connections of one process.
BOOST_AUTO_TEST_CASE(a_reader_in_another_process_never_fails_while_a_writer_writes) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db"), done = dir.file("done");
  int64_t id = 0;
  {
    auto s = open_or_die(path);
    id = s->create_experiment(sample_experiment("e")).value();
  }
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    // No Boost.Test here: the exit status says 0 all reads well and never
    // fewer rows than before, 1 a failed read or open, 2 fewer rows, 3 no read.
    auto reader = open_sqlite_store(path, {true});
    if (!reader)
      ::_exit(1);
    size_t seen = 0;
    int reads = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(done) && std::chrono::steady_clock::now() < deadline) {
      const auto curve = (*reader)->metrics(id, "00003");
      if (!curve || !(*reader)->trials(id))
        ::_exit(1);
      if (curve->size() < seen)
        ::_exit(2);
      seen = curve->size();
      ++reads;
    }
    ::_exit(reads > 0 && seen == 8000 ? 0 : 3);
  }
  {
    auto writer = open_or_die(path);
    std::vector<trial_row> trials;
    for (int i = 0; i < 10; ++i)
      trials.push_back(sample_trial(id, "0000" + std::to_string(i)));
    for (int64_t seq = 1; seq <= 20000; ++seq)
      write_report(*writer, trials[static_cast<size_t>(seq % 10)], seq);
    BOOST_REQUIRE(writer->flush().is_ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  write_file(done, "");
  int wstatus = 0;
  BOOST_REQUIRE(::waitpid(child, &wstatus, 0) == child);
  BOOST_TEST(WIFEXITED(wstatus));
  BOOST_TEST(WEXITSTATUS(wstatus) == 0, "the reader exited with " << WEXITSTATUS(wstatus));
}

BOOST_AUTO_TEST_CASE(flush_returns_a_write_error_and_the_batch_s_other_writes_land) {
  temp_dir dir;
  sqlite_options o;
  o.batch_ms = 600000;  // both writes in one batch
  auto s = open_or_die(dir.file("experiments.db"), o);
  const int64_t id = s->create_experiment(sample_experiment("e")).value();
  BOOST_REQUIRE(s->put_trial(sample_trial(999, "00001")).is_ok());  // no experiment 999
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00002")).is_ok());
  const status failed = s->flush();
  BOOST_TEST(failed.code() == error_code::not_found, failed.to_string());
  BOOST_TEST(failed.message().find("put_trial for experiment 999: no experiment 999 in ") == 0u,
             failed.message());
  BOOST_TEST(s->trials(id).value().size() == 1u);
  BOOST_TEST(s->flush().is_ok());  // reported once

  // Not kept against later writes: they are accepted and land, and the
  // error waits for the next flush.
  BOOST_REQUIRE(s->put_trial(sample_trial(999, "00001")).is_ok());
  BOOST_REQUIRE(s->trials(id).is_ok());  // a read commits: the write fails
  BOOST_TEST(s->put_trial(sample_trial(id, "00003")).is_ok());
  BOOST_TEST(s->flush().code() == error_code::not_found);
  BOOST_TEST(s->flush().is_ok());
  BOOST_TEST(s->trials(id).value().size() == 2u);
}

// The experiment deleted while its run still writes (`dtrain experiments
// delete` of a running one): its writes fail, and nothing else does.
BOOST_AUTO_TEST_CASE(a_deleted_experiment_s_failed_writes_refuse_nothing_else) {
  temp_dir dir;
  sqlite_options o;
  o.batch_ms = 10;
  auto s = open_or_die(dir.file("experiments.db"), o);
  const int64_t gone = s->create_experiment(sample_experiment("gone")).value();
  const int64_t kept = s->create_experiment(sample_experiment("kept")).value();
  BOOST_REQUIRE(s->put_trial(sample_trial(gone, "00001")).is_ok());
  BOOST_REQUIRE(s->put_trial(sample_trial(kept, "00001")).is_ok());
  BOOST_REQUIRE(s->flush().is_ok());
  BOOST_REQUIRE(s->delete_experiment(gone).is_ok());

  BOOST_REQUIRE(s->put_trial(sample_trial(gone, "00002")).is_ok());
  BOOST_REQUIRE(s->trials(kept).is_ok());  // the failed write was tried
  const status later = s->put_trial(sample_trial(kept, "00002"));
  BOOST_TEST(later.is_ok(), later.to_string());
  const auto created = s->create_experiment(sample_experiment("new"));
  BOOST_TEST(created.is_ok(), (created ? "" : created.error().to_string()));
  // One call with rows of both: the deleted one's rows alone are lost.
  std::vector<metric_row> rows{{kept, "00002", 1, "loss", 0.5, 3, 1.0},
                               {gone, "00002", 1, "loss", 0.5, 3, 1.0}};
  BOOST_REQUIRE(s->add_metrics(rows).is_ok());

  const status for_kept = s->flush_experiments({kept});
  BOOST_TEST(for_kept.is_ok(), for_kept.to_string());
  BOOST_TEST(s->trials(kept).value().size() == 2u);
  BOOST_TEST(s->metrics(kept).value().size() == 1u);
  BOOST_TEST(s->experiment(created.value()).value().name == "new");

  const status for_gone = s->flush_experiments({gone});
  BOOST_TEST(for_gone.code() == error_code::not_found, for_gone.to_string());
  const std::string id = std::to_string(gone);
  BOOST_TEST(for_gone.message().find("put_trial for experiment " + id + ": no experiment " + id +
                                     " in ") == 0u,
             for_gone.message());
  BOOST_TEST(for_gone.message().find("(and 1 more failed write of that experiment)") !=
                 std::string::npos,
             for_gone.message());
  BOOST_TEST(s->flush_experiments({gone}).is_ok(), "reported once");
  BOOST_TEST(s->flush().is_ok());
}

// Another connection holds the write lock past busy_timeout, then lets go:
// the store tries the write again by itself, and nothing is lost.
BOOST_AUTO_TEST_CASE(a_lock_held_past_busy_timeout_is_outlasted_and_every_write_lands) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  sqlite_options o;
  o.busy_timeout_ms = 100;
  o.batch_ms = 10;
  auto s = open_or_die(path, o);
  const int64_t id = s->create_experiment(sample_experiment("e")).value();
  sqlite3* other = nullptr;
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00001")).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // an attempt or two fail
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);

  const status later = s->put_trial(sample_trial(id, "00002"));
  BOOST_TEST(later.is_ok(), later.to_string());
  const auto created = s->create_experiment(sample_experiment("f"));
  BOOST_TEST(created.is_ok(), (created ? "" : created.error().to_string()));
  const auto trials = s->trials(id);
  BOOST_REQUIRE(trials.is_ok());
  BOOST_TEST(trials->size() == 2u, "the write that met the lock landed too");
  const status flushed = s->flush();
  BOOST_TEST(flushed.is_ok(), flushed.to_string());
}

BOOST_AUTO_TEST_CASE(a_write_that_never_gets_the_lock_is_given_up_and_reported_once) {
  temp_dir dir;
  const std::string path = dir.file("experiments.db");
  sqlite_options o;
  o.busy_timeout_ms = 50;
  o.batch_ms = 10;
  auto s = open_or_die(path, o);
  const int64_t id = s->create_experiment(sample_experiment("e")).value();
  sqlite3* other = nullptr;
  BOOST_REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
  BOOST_REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00001")).is_ok());
  const status waiting = s->flush();  // after the first attempt
  BOOST_TEST(waiting.code() == error_code::timeout, waiting.to_string());
  BOOST_TEST(waiting.message().find("1 write not stored yet, tried again") != std::string::npos,
             waiting.message());
  // 5 attempts of 50 ms, backoffs of 100 + 200 + 400 + 800 ms: about 2 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  status given_up;
  while (given_up.is_ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    given_up = s->flush();
    if (given_up.message().find("not stored yet") != std::string::npos)
      given_up = status::ok();  // still trying
  }
  BOOST_TEST(given_up.code() == error_code::timeout, given_up.to_string());
  BOOST_TEST(given_up.message().find("put_trial for experiment " + std::to_string(id) +
                                     ": given up after 5 attempts") == 0u,
             given_up.message());
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  BOOST_REQUIRE(s->put_trial(sample_trial(id, "00002")).is_ok());
  BOOST_TEST(s->flush().is_ok());
  BOOST_TEST(s->trials(id).value().size() == 1u);
}

BOOST_AUTO_TEST_CASE(write_errors_are_kept_per_experiment_reported_once_and_bounded) {
  write_errors kept(3);
  kept.keep(7, not_found("seven"));
  kept.keep(5, invalid_argument("five"));
  kept.keep(7, not_found("seven again"));
  kept.keep(6, status::ok());  // not an error
  BOOST_TEST(kept.size() == 2u);
  BOOST_TEST(kept.take({6}).is_ok());
  const status both = kept.take({5, 7});
  BOOST_TEST(both.code() == error_code::not_found, "the earliest error's code");
  BOOST_TEST(both.message() == "seven (and 1 more failed write of that experiment); and five",
             both.message());
  BOOST_TEST(kept.take({5, 7}).is_ok());
  for (int64_t id = 1; id <= 10; ++id)
    kept.keep(id, io_error("e" + std::to_string(id)));
  BOOST_TEST(kept.size() == 3u, "the oldest (smallest ids) are forgotten");
  BOOST_TEST(kept.take_all().message() == "e8; and e9; and e10");
  BOOST_TEST(kept.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
