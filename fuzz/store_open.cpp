// The experiment store's open and the tune journal's replay: the input is
// an SQLite file, opened read-only (open_sqlite_store) and read whole;
// every experiment whose configuration parses as a sweep is replayed
// (tune::replay, as `tune --resume` does) with and without the check of
// its configurations. Errors are fine; crashes, throws and hangs are not.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/journal.hpp"
#include "dtrain/tune/sweep.hpp"
#include "fuzz_util.hpp"

namespace {

void replay_sweep(dtrain::experiments::experiment_store& s, const dtrain::experiments::experiment_row& row) {
  auto exp = dtrain::experiments::parse_experiment(row.configuration, "stored configuration");
  if (!exp.is_ok() || !exp->has_search)
    return;
  for (bool check : {true, false}) {
    auto search = dtrain::tune::make_searcher(exp->space, exp->sweep);
    auto sched = dtrain::tune::make_scheduler(exp->sweep, exp->space);
    if (!search || !sched.is_ok())
      return;
    auto stoppers = dtrain::tune::make_stoppers(exp->sweep);
    (void)dtrain::tune::replay(s, row.id, *search, **sched, stoppers, exp->sweep, check);
    (void)dtrain::tune::next_sequence(s, row.id);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dtrain::fuzz::scratch_dir() + "/experiments.db";
  dtrain::fuzz::write_file(path, data, size);
  dtrain::experiments::sqlite_options o;
  o.read_only = true;
  o.busy_timeout_ms = 100;
  auto opened = dtrain::experiments::open_sqlite_store(path, o);
  if (!opened.is_ok())
    return 0;
  auto& s = **opened;
  auto experiments = s.experiments();
  if (!experiments.is_ok())
    return 0;
  for (const auto& e : *experiments) {
    (void)s.experiment(e.id);
    (void)s.lineage(e.id);
    (void)s.events(e.id, "");
    if (auto trials = s.trials(e.id); trials.is_ok())
      for (const auto& t : *trials) {
        (void)s.metrics(e.id, t.id);
        (void)s.checkpoints(e.id, t.id);
        (void)s.events(e.id, t.id);
      }
    replay_sweep(s, e);
  }
  return 0;
}
