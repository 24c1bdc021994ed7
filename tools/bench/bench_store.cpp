// The experiment store's cost to the tuner (issue 10: with the store on, a
// tuner must still ingest >= 10,000 results/s):
//   a. results/s through the interface: each result is one report as the
//      tuner writes it (add_metrics of 4 rows + put_trial), round robin
//      over the trials; the calls alone (what the tuner's thread pays) and
//      to the end of flush() (everything durable);
//   b. the same rows inserted by hand with SQLite's C API, prepared
//      statements, one transaction (no queue, no thread: a bound on what
//      any store over SQLite can reach);
//   c. reads: one trial's curve (metrics(experiment, trial)) and the trial
//      list, median of repeats, while nothing writes.
//
//   build/bin/dtrain-bench-store [--reports 100000] [--trials 64] [--batch-ms 50]
//                                [--dir /tmp] [--repeats 50]
#include <CLI/CLI.hpp>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "bench_util.hpp"
#include "dtrain/experiments/store.hpp"

using namespace dtrain;
using namespace dtrain::experiments;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

const char* const metric_names[] = {"loss", "accuracy", "validation_loss", "validation_accuracy"};

void die(const status& s) {
  std::fprintf(stderr, "dtrain-bench-store: %s\n", s.to_string().c_str());
  std::exit(1);
}

struct ingest {
  double calls_per_s = 0;  // reports / time in the calls
  double flushed_per_s = 0;  // reports / time to the end of flush()
};

ingest through_store(experiment_store& s, int64_t experiment, int64_t reports, int trials) {
  std::vector<trial_row> rows(static_cast<size_t>(trials));
  for (int i = 0; i < trials; ++i) {
    rows[static_cast<size_t>(i)].experiment = experiment;
    rows[static_cast<size_t>(i)].id = std::to_string(10000 + i).substr(1);
    rows[static_cast<size_t>(i)].hyperparameters = R"({"lr": 0.01, "batch": 64})";
    rows[static_cast<size_t>(i)].state = "running";
  }
  const auto start = clock_type::now();
  for (int64_t seq = 1; seq <= reports; ++seq) {
    trial_row& t = rows[static_cast<size_t>(seq % trials)];
    t.epochs = seq / trials;
    std::vector<metric_row> metrics;
    metrics.reserve(4);
    for (const char* name : metric_names)
      metrics.push_back({experiment, t.id, t.epochs, name, 1.0 / static_cast<double>(seq), seq,
                         1.7e9 + static_cast<double>(seq)});
    t.last = metrics.back().value;
    if (status st = s.add_metrics(metrics); !st)
      die(st);
    if (status st = s.put_trial(t); !st)
      die(st);
  }
  const double calls = seconds_since(start);
  if (status st = s.flush(); !st)
    die(st);
  const double flushed = seconds_since(start);
  return {static_cast<double>(reports) / calls, static_cast<double>(reports) / flushed};
}

// The same rows with SQLite's C API in one transaction, into a table of
// the store's shape.
double raw_sqlite(const std::string& path, int64_t reports, int trials) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db,
               "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
               "CREATE TABLE metrics (experiment INTEGER NOT NULL, trial TEXT NOT NULL, "
               "seq INTEGER NOT NULL, name TEXT NOT NULL, epoch INTEGER NOT NULL, value ANY, "
               "time ANY, PRIMARY KEY (experiment, trial, seq, name)) STRICT, WITHOUT ROWID;"
               "CREATE TABLE trials (experiment INTEGER NOT NULL, id TEXT NOT NULL, "
               "epochs INTEGER NOT NULL, last ANY, PRIMARY KEY (experiment, id)) STRICT, "
               "WITHOUT ROWID;",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* metric = nullptr;
  sqlite3_stmt* trial = nullptr;
  sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO metrics VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)", -1,
                     &metric, nullptr);
  sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO trials VALUES (1, ?1, ?2, ?3)", -1, &trial,
                     nullptr);
  const auto start = clock_type::now();
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  for (int64_t seq = 1; seq <= reports; ++seq) {
    const std::string id = std::to_string(10000 + seq % trials).substr(1);
    const double value = 1.0 / static_cast<double>(seq);
    for (const char* name : metric_names) {
      sqlite3_bind_text(metric, 1, id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(metric, 2, seq);
      sqlite3_bind_text(metric, 3, name, -1, SQLITE_STATIC);
      sqlite3_bind_int64(metric, 4, seq / trials);
      sqlite3_bind_double(metric, 5, value);
      sqlite3_bind_double(metric, 6, 1.7e9 + static_cast<double>(seq));
      sqlite3_step(metric);
      sqlite3_reset(metric);
    }
    sqlite3_bind_text(trial, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(trial, 2, seq / trials);
    sqlite3_bind_double(trial, 3, value);
    sqlite3_step(trial);
    sqlite3_reset(trial);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  const double took = seconds_since(start);
  sqlite3_finalize(metric);
  sqlite3_finalize(trial);
  sqlite3_close(db);
  return static_cast<double>(reports) / took;
}

template <class Read>
double median_ms(int repeats, const Read& read) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = clock_type::now();
    read();
    ms.push_back(1000 * seconds_since(start));
  }
  return bench::median(ms);
}

} // namespace

int main(int argc, char** argv) {
  int64_t reports = 100000;
  int trials = 64, batch_ms = 50, repeats = 50;
  std::string base = fs::temp_directory_path().string();
  CLI::App app{"dtrain experiment store: results/s through the interface, and reads"};
  app.add_option("--reports", reports, "reports written (4 metrics + a trial update each)");
  app.add_option("--trials", trials, "trials the reports go round");
  app.add_option("--batch-ms", batch_ms, "the store's batch_ms");
  app.add_option("--dir", base, "where the temporary databases go");
  app.add_option("--repeats", repeats, "repetitions of each read; medians are reported");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = base + "/dtrain-bench-store-" + std::to_string(::getpid());
  fs::create_directories(dir);
  sqlite_options o;
  o.batch_ms = batch_ms;
  auto opened = open_sqlite_store(dir + "/experiments.db", o);
  if (!opened)
    die(opened.error());
  experiment_store& s = **opened;
  experiment_row e;
  e.name = "bench";
  e.kind = "tune";
  auto id = s.create_experiment(e);
  if (!id)
    die(id.error());

  const ingest store = through_store(s, *id, reports, trials);
  const double raw = raw_sqlite(dir + "/raw.db", reports, trials);
  std::vector<metric_row> curve;
  const double curve_ms = median_ms(repeats, [&] { curve = s.metrics(*id, "0003").value(); });
  size_t listed = 0;
  const double list_ms = median_ms(repeats, [&] { listed = s.trials(*id)->size(); });
  opened->reset();
  fs::remove_all(dir);

  std::printf("%-52s %14s\n", "what", "figure");
  std::printf("%-52s %14.0f\n", "a. store: results/s in the calls", store.calls_per_s);
  std::printf("%-52s %14.0f\n", "a. store: results/s to the end of flush()", store.flushed_per_s);
  std::printf("%-52s %14.0f\n", "b. raw SQLite C API, one transaction: results/s", raw);
  std::printf("%-52s %14.3f\n",
              ("c. one trial's curve (" + std::to_string(curve.size()) + " rows): ms").c_str(),
              curve_ms);
  std::printf("%-52s %14.3f\n",
              ("c. the trial list (" + std::to_string(listed) + " trials): ms").c_str(), list_ms);
  std::printf("summary: %lld reports over %d trials, batch_ms %d: %.0f results/s through the store "
              "(flushed; %.0f%% of raw SQLite), target >= 10000\n",
              static_cast<long long>(reports), trials, batch_ms, store.flushed_per_s,
              100 * store.flushed_per_s / raw);
  return store.flushed_per_s >= 10000 ? 0 : 1;
}
