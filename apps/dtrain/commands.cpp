// `dtrain train` and `dtrain tune`: what they run (their options: train_command.cpp,
// tune_command.cpp).
#include "commands.hpp"

#include <chrono>
#include <cstdio>
#include <thread>
#include <unistd.h>

#include "experiment_runs.hpp"
#include "progress_bar.hpp"
#include <filesystem>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/tune/journal.hpp"

namespace dtrain::cli {

namespace {

using namespace dtrain::actors;

int fail(const status& s) {
  std::fprintf(stderr, "error: %s\n", s.to_string().c_str());
  return 1;
}

// The "[chief] epoch ..." line of an epoch and the validation after it.
std::string epoch_line(int64_t epochs, const metrics_msg& m, const metrics_msg& v) {
  // The operator's own metrics, as the tuner names them.
  std::string extra;
  char value[64];
  for (const auto& [name, x] : m.extra) {
    std::snprintf(value, sizeof value, " %.4f", x);
    extra += "  " + name + value;
  }
  for (const auto& [name, x] : v.extra) {
    std::snprintf(value, sizeof value, " %.4f", x);
    extra += "  validation_" + name + value;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "[chief] epoch %lld/%lld  %lld steps  lr %.5f  train loss %.4f acc %.4f  "
                "validation loss %.4f acc %.4f",
                static_cast<long long>(m.epoch), static_cast<long long>(epochs),
                static_cast<long long>(m.steps), static_cast<double>(m.lr), m.loss, m.accuracy,
                v.loss, v.accuracy);
  char rate[96];
  std::snprintf(rate, sizeof rate, "  %.2f s  %.0f samples/s", m.seconds, m.samples_per_second);
  return line + extra + rate;
}

} // namespace

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
  auto run = begin_experiment(*store, *e, "train", o.resume, o.force);
  if (!run)
    return fail(run.error());
  const int64_t id = run->row.id;
  trainer_config tc = trainer_config_from(*e);
  // One bar for the group on a terminal, per-rank lines with --verbose,
  // neither in a log (the epoch lines say enough there). Shared with the
  // trainer's progress actor, which may still hold a message when this
  // function returns.
  auto display = std::make_shared<progress_display>(tc.num_replicas, e->epochs, o.verbose);
  if (o.verbose || display->terminal()) {
    tc.progress_seconds = o.verbose ? 1.0 : 0.25;
    tc.progress_all_ranks = o.verbose;
    tc.on_progress = [display](const progress_msg& p) { display->update(p); };
  }
  if (display->terminal())  // the trainer's notes must not land on the bar's line
    tc.on_note = [display](const std::string& text) { display->note(text); };
  // One trial, 00000, checkpointing under <storage>/00000, the storage
  // <root>/<experiment id>-<token> marked as the experiment's own
  // (begin_experiment): a new experiment never finds another's checkpoints.
  tc.checkpoint_dir = run->row.storage.empty() ? "" : run->row.storage + "/00000";
  std::printf("experiment %lld%s: %s, %d replicas of %s on %s cluster, global batch %lld, "
              "%lld epochs\n",
              static_cast<long long>(id), run->resumed ? " (resumed)" : "", e->name.c_str(),
              tc.num_replicas, tc.operator_name.c_str(), (*c)->where().c_str(),
              static_cast<long long>(tc.global_batch_size), static_cast<long long>(e->epochs));
  std::fflush(stdout);
  // The trial's record: its stored history when resumed.
  tune::trial_record trial;
  trial.id = "00000";
  for (const auto& [k, v] : e->hyperparameters)
    trial.configuration[k] = v;
  trial.checkpoint_dir = tc.checkpoint_dir;
  int64_t next_seq = 1;
  if (run->resumed) {
    auto seq = tune::next_sequence(**store, id);
    auto rows = (*store)->metrics(id, trial.id);
    if (!seq || !rows) {
      const status s = !seq ? seq.error() : rows.error();
      end_experiment(*run, "failed", s.to_string());  // never left running
      return fail(s);
    }
    next_seq = *seq;
    for (const auto& m : *rows) {
      if (trial.history.empty() || trial.history.back().epoch != m.epoch)
        trial.history.push_back({trial.id, m.epoch, {}});
      trial.history.back().metrics[m.name] = m.value;
    }
  }
  tune::journal journal(*store, id, e->sweep.metric, e->sweep.direction, next_seq);
  bool stored = false;  // the trial's row: a driver killed at once may have lost it
  if (run->resumed) {
    auto rows = (*store)->trials(id);
    if (!rows) {
      end_experiment(*run, "failed", rows.error().to_string());
      return fail(rows.error());
    }
    journal.adopt(*rows);
    for (const auto& row : *rows)
      stored = stored || row.id == trial.id;
  }
  if (!stored)
    journal.created(trial);
  auto failed = [&](const status& s) {
    display->clear();
    trial.status = tune::trial_status::error;
    trial.error = s.to_string();
    journal.ended(trial, tune::trial_end::failed);
    end_experiment(*run, "failed", trial.error);
    return fail(s);
  };
  // The group's failures and recoveries go to the store beside the notes
  // (on this thread: the trainer calls it inside train() and the others).
  tc.on_event = [&journal, &trial](const trainer_event& ev) {
    journal.event(trial, ev.epoch, ev.kind, ev.message);
  };
  auto t = trainer::create(**c, tc);
  if (!t)
    return failed(t.error());
  std::printf("replicas ready in %.3f s\n", (*t)->startup_seconds());
  trial.status = tune::trial_status::running;
  journal.updated(trial);
  if (run->resumed && !tc.checkpoint_dir.empty()) {
    status resumed = (*t)->restore(tc.checkpoint_dir);
    if (resumed.is_ok())
      std::printf("resumed from the newest valid checkpoint in %s\n", tc.checkpoint_dir.c_str());
    else if (resumed.code() != error_code::not_found)
      return failed(resumed);
  }
  // Ctrl-C / SIGTERM: the replicas stop at their next check, checkpoint,
  // and this process exits cleanly; a second signal kills it.
  signal_watch watch([&] {
    display->line("stopping: asking the replicas to checkpoint and stop");
    (void)(*t)->preempt();
  });
  metrics_msg last_validation;
  int64_t done = 0;
  std::map<int64_t, std::string> checkpoints = checkpoint::checkpoint_dirs(tc.checkpoint_dir);
  if (run->resumed) {  // where a restored group stands
    auto v = (*t)->validate();
    if (!v)
      return failed(v.error());
    done = v->epoch;
    last_validation = *v;
    if (done >= e->epochs)
      std::printf("all %lld epochs of experiment %lld were done already\n",
                  static_cast<long long>(e->epochs), static_cast<long long>(id));
  }
  // By the epoch the replicas report: after a failure they may resume from
  // an earlier checkpoint and repeat epochs.
  while (done < e->epochs) {
    auto m = (*t)->train();
    if (!m)
      return failed(m.error());
    display->finished_epoch(m->preempted ? m->epoch + 1 : m->epoch);
    if (m->preempted) {
      std::printf("preempted in epoch %lld after %lld batches%s\n", static_cast<long long>(m->epoch + 1),
                  static_cast<long long>(m->resume_batch),
                  tc.checkpoint_dir.empty()
                      ? " (no checkpoint_dir: progress is lost)"
                      : ("; checkpoint saved: continue with `dtrain train " + o.experiment +
                         " --resume " + std::to_string(id) + "`").c_str());
      trial.interrupted = true;
      journal.updated(trial);
      end_experiment(*run, "interrupted", "preempted by a signal");
      return (*t)->shutdown().is_ok() ? 0 : 1;
    }
    auto v = (*t)->validate();
    if (!v)
      return failed(v.error());
    display->line(epoch_line(e->epochs, *m, *v));
    last_validation = *v;
    done = m->epoch;
    tune::report rep{trial.id, m->epoch,
                     {{"loss", m->loss}, {"accuracy", m->accuracy},
                      {"validation_loss", v->loss}, {"validation_accuracy", v->accuracy},
                      {"lr", static_cast<double>(m->lr)}}};
    rep.metrics.merge(speed_metrics(*m, (*t)->failures().size()));
    trial.history.push_back(rep);
    auto now = checkpoint::checkpoint_dirs(tc.checkpoint_dir);
    journal.checkpoints_changed(trial, checkpoints, now);
    checkpoints = std::move(now);
    journal.reported(trial, rep);
  }
  if (!tc.checkpoint_dir.empty())
    std::printf("checkpoints in %s\n", tc.checkpoint_dir.c_str());
  if (!(*t)->failures().empty())
    std::printf("recovered from %zu failures\n", (*t)->failures().size());
  std::printf("validation: loss %.4f, accuracy %.4f (%lld samples)\n", last_validation.loss,
              last_validation.accuracy, static_cast<long long>(last_validation.samples));
  trial.restarts = static_cast<int>((*t)->failures().size());
  trial.status = tune::trial_status::terminated;
  journal.ended(trial, tune::trial_end::completed);
  end_experiment(*run, "completed", "");
  std::printf("experiment %lld completed (dtrain experiments show %lld)\n",
              static_cast<long long>(id), static_cast<long long>(id));
  if (auto s = (*t)->shutdown(); !s)
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
