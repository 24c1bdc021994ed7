// `dtrain train` and `dtrain tune`: what they run (their options: train_command.cpp,
// tune_command.cpp).
#include "commands.hpp"
#include "command_line.hpp"

#include <chrono>
#include <cstdio>
#include <thread>
#include <unistd.h>

#include <filesystem>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/runs/experiment_runs.hpp"
#include "dtrain/driver/runs/progress_bar.hpp"
#include "dtrain/driver/runs/train_run.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::cli {

using namespace dtrain::actors;
using namespace dtrain::runs;

int run_train(const train_options& o) {
  auto e = experiments::load_experiment(o.experiment);
  if (!e)
    return fail(e.error());
  if (e->has_search) {
    // A sweep runs many trials; `dtrain train` runs one.
    std::string names;
    for (const auto& name : e->space.varying())
      names += (names.empty() ? "" : ", ") + name;
    const std::string what =
        names.empty() ? "runs a sweep" : "searches hyperparameters " + names;
    return fail(invalid_argument(o.experiment + ": searcher " + experiments::searcher_name(*e) + " " +
                                 what + ": run it with `dtrain tune " + o.experiment + "`"));
  }
  auto attach = attach_options(o.address, o.embedded, o.tls, "train");
  if (!attach)
    return fail(attach.error());
  cluster::options co = *attach;
  co.local_slots = std::max(o.local_slots, e->slots_per_trial);
  if (status s = check_dashboard_flags(o.dashboard); !s)
    return fail(s);
  auto c = cluster::connect(co);
  if (!c)
    return fail(c.error());
  // Declared after the cluster: it stops before the cluster's actor system.
  auto dash = serve_dashboard((*c)->system(), (*c)->head(), (*c)->session(), o.dashboard,
                              "dtrain train:", (*c)->client_files());
  if (!dash)
    return fail(dash.error());
  auto store = (*c)->experiments();
  if (!store)
    return fail(store.error());
  runs::train_request r;
  r.file = o.experiment;
  r.resume = o.resume;
  r.force = o.force;
  r.verbose = o.verbose;
  // Ctrl-C / SIGTERM: the replicas stop at their next check, checkpoint,
  // and this process exits cleanly; a second signal kills it.
  r.watch_signals = [](std::function<void()> on_signal) {
    return std::shared_ptr<void>(std::make_shared<signal_watch>(std::move(on_signal)));
  };
  if (status s = runs::train_experiment(**c, *store, *e, r); !s)
    return fail(s);
  return 0;
}

// A sweep from an experiment file's searcher section and typed
// hyperparameters: the trial table on stdout, the best trial at the end.
// Ctrl-C / SIGTERM stop every trial (each checkpoints when it can) and print
// the table so far; a second signal kills the process.
int run_tune(const tune_options& o) {
  auto e = experiments::load_experiment(o.experiment);
  if (!e)
    return fail(e.error());
  if (!e->has_search)
    return fail(invalid_argument(o.experiment + ": no searcher (searcher.name grid, random or "
                                 "asha) and nothing to search: run it with `dtrain train`"));
  auto attach = attach_options(o.address, o.embedded, o.tls, "tune");
  if (!attach)
    return fail(attach.error());
  cluster::options co = *attach;
  // 0 leaves the embedded cluster its default (the cores, at least 2) so
  // that trials run side by side; max(0, slots_per_trial) would have made
  // it one trial's worth and the sweep one trial at a time.
  const int cores = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  co.local_slots = std::max(o.local_slots > 0 ? o.local_slots : cores, e->slots_per_trial);
  if (status s = check_dashboard_flags(o.dashboard); !s)
    return fail(s);
  auto c = cluster::connect(co);
  if (!c)
    return fail(c.error());
  // Declared after the cluster: it stops before the cluster's actor system.
  auto dash = serve_dashboard((*c)->system(), (*c)->head(), (*c)->session(), o.dashboard,
                              "dtrain tune:", (*c)->client_files());
  if (!dash)
    return fail(dash.error());
  auto store = (*c)->experiments();
  if (!store)
    return fail(store.error());
  auto run = begin_experiment(*store, *e, "tune", o.resume, o.force);
  if (!run)
    return fail(run.error());
  std::printf("experiment %lld%s: sweep %s\n", static_cast<long long>(run->row.id),
              run->resumed ? " (resumed)" : "", e->name.c_str());
  std::fflush(stdout);
  tune_config tc;
  static_cast<tune::sweep_config&>(tc) = e->sweep;
  tc.experiment = e->name;
  tc.storage = e->checkpoint_dir;
  // The experiment's own directory, marked by begin_experiment.
  tc.experiment_dir = run->row.storage;
  tc.owner = storage_owner(run->row, (*store)->where());
  tc.store = *store;
  tc.experiment_id = run->row.id;
  tc.resume = run->resumed;
  tc.force = o.force;
  tc.verbosity = o.verbosity;
  tc.redraw = stdout_is_terminal();
  tc.bar_width = tc.redraw ? terminal_width() : 0;
  tuner sweep(**c, trainer_config_from(*e), e->space, tc);
  signal_watch watch([&] { sweep.stop("interrupted by a signal"); });
  auto grid = sweep.fit();
  if (!grid) {
    // A resume refused before any trial ran (the replay disagrees, the
    // cluster is too small) leaves the experiment as it was, resumable.
    const bool refused = run->resumed && grid.error().code() == error_code::invalid_argument;
    end_experiment(*run, refused ? run->previous_state : "failed", grid.error().to_string());
    return fail(grid.error());
  }
  if (!grid->stop_reason.empty() && grid->stop_reason == "interrupted by a signal")
    std::printf("continue it with `dtrain tune %s --resume %lld`\n", o.experiment.c_str(),
                static_cast<long long>(run->row.id));
  bool any_ok = false;
  int64_t epochs = 0;
  for (const auto& t : grid->trials) {
    any_ok = any_ok || t.status != tune::trial_status::error;
    epochs += t.epochs();
  }
  const int64_t full = static_cast<int64_t>(grid->trials.size()) * tc.max_epochs;
  std::printf("epochs run: %lld of the %lld that %zu trials run to the end would take (%.0f%%)\n",
              static_cast<long long>(epochs), static_cast<long long>(full), grid->trials.size(),
              full > 0 ? 100.0 * static_cast<double>(epochs) / static_cast<double>(full) : 0.0);
  return any_ok || grid->trials.empty() ? 0 : 1;
}

} // namespace dtrain::cli
