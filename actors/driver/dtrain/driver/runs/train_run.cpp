#include "dtrain/driver/runs/train_run.hpp"

#include <cstdio>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/runs/experiment_runs.hpp"
#include "dtrain/driver/runs/progress_bar.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/resume_scan.hpp"
#include "dtrain/driver/tuner/trial_runner.hpp"
#include "dtrain/tune/journal.hpp"

namespace dtrain::runs {

namespace {

using namespace dtrain::actors;

// The "[chief] epoch ..." line of an epoch and the validation after it.
std::string epoch_line(int64_t epochs, const metrics_msg& m, const metrics_msg& v) {
  // The operator's own metrics, as the tuner names them.
  std::string extra;
  char value[64];
  for (const auto& [name, x] : m.extra) {
    // The replica's memory accounting (memory.*_bytes) in MiB.
    const std::string bytes = "_bytes";
    const bool sized = name.size() > bytes.size() &&
                       name.compare(name.size() - bytes.size(), bytes.size(), bytes) == 0;
    std::snprintf(value, sizeof value, sized ? " %.1f MiB" : " %.4f",
                  sized ? x / (1 << 20) : x);
    extra += "  " + (sized ? name.substr(0, name.size() - bytes.size()) : name) + value;
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

// One `dtrain train` run: the experiment's row, its one trial's record and
// journal, and what the trial runner's observer prints and records.
class train_run {
public:
  train_run(cluster& c, experiment_run run, const experiments::experiment& e,
            const train_request& r)
    : c_(c), run_(std::move(run)), e_(e), r_(r) {}

  status go();

private:
  void configure();
  status load_history(int64_t& next_seq);
  status open_journal(int64_t next_seq);
  void resume_point();
  trial_observer observer();
  bool report(const trial_epoch& ep);
  status finish(const trial_outcome& out);
  status failed(const status& s);

  cluster& c_;
  experiment_run run_;
  const experiments::experiment& e_;
  const train_request& r_;
  trainer_config tc_;
  std::shared_ptr<progress_display> display_;
  tune::trial_record trial_;
  std::unique_ptr<tune::journal> journal_;
  trial_launch launch_;
  std::map<int64_t, std::string> checkpoints_;
  metrics_msg last_validation_;
};

void train_run::configure() {
  tc_ = trainer_config_from(e_);
  // One bar for the group on a terminal, per-rank lines with --verbose,
  // neither in a log (the epoch lines say enough there). Shared with the
  // trainer's progress actor, which may still hold a message when the run
  // returns.
  display_ = std::make_shared<progress_display>(tc_.num_replicas, e_.epochs, r_.verbose);
  if (r_.verbose || display_->terminal()) {
    tc_.progress_seconds = r_.verbose ? 1.0 : 0.25;
    tc_.progress_all_ranks = r_.verbose;
    tc_.on_progress = [display = display_](const progress_msg& p) { display->update(p); };
  }
  if (display_->terminal())  // the trainer's notes must not land on the bar's line
    tc_.on_note = [display = display_](const std::string& text) { display->note(text); };
  // One trial, 00000, checkpointing under <storage>/00000, the storage
  // <root>/<experiment id>-<token> marked as the experiment's own
  // (begin_experiment): a new experiment never finds another's checkpoints.
  tc_.checkpoint_dir = run_.row.storage.empty() ? "" : run_.row.storage + "/00000";
  trial_.id = "00000";
  for (const auto& [k, v] : e_.hyperparameters)
    trial_.configuration[k] = v;
  trial_.checkpoint_dir = tc_.checkpoint_dir;
}

// A resumed trial's stored history, and the journal's next sequence number.
status train_run::load_history(int64_t& next_seq) {
  next_seq = 1;
  if (!run_.resumed)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(next_seq, tune::next_sequence(*run_.store, run_.row.id));
  DTRAIN_ASSIGN_OR_RETURN(auto rows, run_.store->metrics(run_.row.id, trial_.id));
  for (const auto& m : rows) {
    if (trial_.history.empty() || trial_.history.back().epoch != m.epoch)
      trial_.history.push_back({trial_.id, m.epoch, {}});
    trial_.history.back().metrics[m.name] = m.value;
  }
  return status::ok();
}

status train_run::open_journal(int64_t next_seq) {
  journal_ = std::make_unique<tune::journal>(run_.store, run_.row.id, e_.sweep.metric,
                                             e_.sweep.direction, next_seq);
  bool stored = false;  // the trial's row: a driver killed at once may have lost it
  if (run_.resumed) {
    DTRAIN_ASSIGN_OR_RETURN(auto rows, run_.store->trials(run_.row.id));
    journal_->adopt(rows);
    for (const auto& row : rows)
      stored = stored || row.id == trial_.id;
  }
  if (!stored)
    journal_->created(trial_);
  return status::ok();
}

// Where the trial starts: as the tuner resumes a trial (scan_for_resume).
void train_run::resume_point() {
  launch_.id = trial_.id;
  launch_.max_epochs = e_.epochs;
  if (!run_.resumed || tc_.checkpoint_dir.empty()) {
    checkpoints_ = checkpoint::checkpoint_dirs(tc_.checkpoint_dir);
    return;
  }
  resume_scan scan =
      scan_for_resume(trial_.id, tc_.checkpoint_dir, trial_.epochs(), false, run_.row.storage,
                      storage_owner(run_.row, run_.store->where()));
  for (const auto& note : scan.notes)
    display_->note(note);
  checkpoints_ = std::move(scan.on_disk);
  launch_.restore_from = scan.from;
  launch_.report_restored = scan.unreported;
}

bool train_run::report(const trial_epoch& ep) {
  display_->line(epoch_line(e_.epochs, *ep.train, *ep.validation));
  last_validation_ = *ep.validation;
  tune::report rep{trial_.id, ep.epoch, ep.metrics};
  trial_.history.push_back(rep);
  journal_->checkpoints_changed(trial_, checkpoints_, ep.checkpoints);
  checkpoints_ = ep.checkpoints;
  journal_->reported(trial_, rep);
  return true;
}

trial_observer train_run::observer() {
  trial_observer o;
  o.up = [this](trainer& t) {
    std::printf("replicas ready in %.3f s\n", t.startup_seconds());
    trial_.status = tune::trial_status::running;
    journal_->updated(trial_);
  };
  o.restored = [this](const metrics_msg& v) {
    std::printf("resumed from the newest valid checkpoint in %s\n", tc_.checkpoint_dir.c_str());
    last_validation_ = v;
    if (v.epoch >= e_.epochs)
      std::printf("all %lld epochs of experiment %lld were done already\n",
                  static_cast<long long>(e_.epochs), static_cast<long long>(run_.row.id));
  };
  o.trained = [this](const metrics_msg& m) {
    display_->finished_epoch(m.preempted ? m.epoch + 1 : m.epoch);
    if (m.preempted)
      std::printf("preempted in epoch %lld after %lld batches%s\n",
                  static_cast<long long>(m.epoch + 1), static_cast<long long>(m.resume_batch),
                  tc_.checkpoint_dir.empty()
                      ? " (no checkpoint_dir: progress is lost)"
                      : ("; checkpoint saved: continue with `dtrain train " + r_.file +
                         " --resume " + std::to_string(run_.row.id) + "`").c_str());
  };
  o.report = [this](const trial_epoch& ep) { return report(ep); };
  // The group's failures and recoveries go to the store beside the notes.
  o.event = [this](const trainer_event& ev) {
    journal_->event(trial_, ev.epoch, ev.kind, ev.message);
  };
  return o;
}

status train_run::failed(const status& s) {
  display_->clear();
  trial_.status = tune::trial_status::error;
  trial_.error = s.to_string();
  journal_->ended(trial_, tune::trial_end::failed);
  end_experiment(run_, "failed", trial_.error);
  return s;
}

status train_run::finish(const trial_outcome& out) {
  trial_.restarts = out.restarts;
  if (!out.error)
    return failed(out.error);
  if (out.interrupted) {
    trial_.interrupted = true;
    journal_->updated(trial_);
    end_experiment(run_, "interrupted", "preempted by a signal");
    return out.shutdown;
  }
  if (!tc_.checkpoint_dir.empty())
    std::printf("checkpoints in %s\n", tc_.checkpoint_dir.c_str());
  if (out.restarts > 0)
    std::printf("recovered from %d failures\n", out.restarts);
  std::printf("validation: loss %.4f, accuracy %.4f (%lld samples)\n", last_validation_.loss,
              last_validation_.accuracy, static_cast<long long>(last_validation_.samples));
  trial_.status = tune::trial_status::terminated;
  journal_->ended(trial_, tune::trial_end::completed);
  end_experiment(run_, "completed", "");
  std::printf("experiment %lld completed (dtrain experiments show %lld)\n",
              static_cast<long long>(run_.row.id), static_cast<long long>(run_.row.id));
  return out.shutdown;
}

status train_run::go() {
  configure();
  std::printf("experiment %lld%s: %s, %d replicas of %s on %s cluster, global batch %lld, "
              "%lld epochs\n",
              static_cast<long long>(run_.row.id), run_.resumed ? " (resumed)" : "",
              e_.name.c_str(), tc_.num_replicas, tc_.operator_name.c_str(), c_.where().c_str(),
              static_cast<long long>(tc_.global_batch_size), static_cast<long long>(e_.epochs));
  std::fflush(stdout);
  int64_t next_seq = 1;
  status ready = load_history(next_seq);
  if (ready)
    ready = open_journal(next_seq);
  if (!ready) {
    end_experiment(run_, "failed", ready.to_string());  // never left running
    return ready;
  }
  resume_point();
  launch_.config = tc_;
  // Ctrl-C / SIGTERM: the replicas stop at their next check, checkpoint,
  // and the run ends cleanly.
  trial_control control;
  std::shared_ptr<void> watch;
  if (r_.watch_signals)
    watch = r_.watch_signals([this, &control] {
      display_->line("stopping: asking the replicas to checkpoint and stop");
      control.interrupt();
    });
  trial_outcome out = run_trial(c_, launch_, control, observer());
  watch.reset();
  return finish(out);
}

} // namespace

status train_experiment(cluster& c, const std::shared_ptr<experiments::experiment_store>& store,
                        const experiments::experiment& e, const train_request& r) {
  DTRAIN_ASSIGN_OR_RETURN(experiment_run run, begin_experiment(store, e, "train", r.resume, r.force));
  train_run t(c, std::move(run), e, r);
  return t.go();
}

} // namespace dtrain::runs
