// A trial's life in the sweep: drawn from the searcher (or taken up again
// from a resumed sweep), prepared on the worker, launched on a runner of
// its own, and ended: terminated, stopped, failed or interrupted.
#include <chrono>
#include <cstdio>
#include <string>

#include "dtrain/driver/tuner/resume_scan.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

std::string trial_id(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%05lld", static_cast<long long>(n));
  return buf;
}

namespace {

// With bars under the table (tune_config::bar_width), trial `id`'s trainer
// notes and its chief's progress come to this actor.
void route_to_table(tuner_pointer self, const std::string& id, trainer_config& config) {
  auto& s = self->state;
  if (!s.sw->config.redraw || s.sw->config.bar_width <= 0)
    return;
  if (!config.on_note) {
    // On stderr the trainer's notes would break the table drawn in place:
    // the latest is shown under the trial's row instead.
    config.on_note = [tuner = caf::actor_cast<caf::weak_actor_ptr>(self), id,
                      prefix = "dtrain: trainer " + config.name + ": "](const std::string& line) {
      // Under its trial's row the trainer's name says nothing new.
      std::string text = line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line;
      if (auto strong = tuner.lock())
        caf::anon_send(caf::actor_cast<caf::actor>(strong), trial_note_atom::value, id,
                       std::move(text));
    };
  }
  // The chief's progress comes to this actor, tagged with the trial. A
  // weak handle: the trainer keeps its configuration (and this function)
  // for as long as it runs, which must not keep the tuner alive.
  config.progress_seconds = s.sw->config.progress_seconds;
  config.progress_all_ranks = false;
  config.on_progress = [tuner = caf::actor_cast<caf::weak_actor_ptr>(self), id,
                        previous = config.on_progress](const progress_msg& p) {
    if (previous)
      previous(p);
    if (auto strong = tuner.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), progress_atom::value, id, p);
  };
}

} // namespace

// Starts the runner of trial `id` (its record exists), from `restore_from`
// when not empty.
void launch_trial(tuner_pointer self, const std::string& id, const std::string& restore_from) {
  auto& s = self->state;
  tune::trial_record& r = s.record(id);
  trial_launch launch;
  launch.id = id;
  launch.config = s.sw->trial_template;
  launch.config.name = s.sw->config.experiment + "-" + id;
  for (auto& [k, v] : tune::to_strings(r.configuration))
    launch.config.config[k] = v;
  launch.config.checkpoint_dir = r.checkpoint_dir;
  launch.restore_from = restore_from;
  launch.report_restored = s.report_restored.erase(id) > 0 && !restore_from.empty();
  launch.max_epochs = s.sw->config.max_epochs;
  launch.metric = s.sw->config.metric;
  for (size_t k = 1; k < s.sw->config.objectives.size(); ++k)  // mo
    launch.other_metrics.push_back(s.sw->config.objectives[k].metric);
  for (const auto& c : s.sw->config.constraints)
    launch.other_metrics.push_back(c.metric);
  s.progress.erase(id);
  s.notes.erase(id);
  route_to_table(self, id, launch.config);
  live_trial t;
  t.handle = s.sw->launch(self->system(), caf::actor_cast<caf::actor>(self), launch);
  t.since = clock_type::now();
  self->monitor(t.handle.runner);
  s.sw->track(id, t.handle.interrupt);
  s.live.emplace(id, std::move(t));
}

// A trial whose launch was prepared while the sweep began to end: it
// never ran this time, and a resume continues it (as if its run had been
// interrupted at once).
void never_launched(tuner_pointer self, const std::string& id) {
  auto& s = self->state;
  tune::trial_record& r = s.record(id);
  r.status = tune::trial_status::stopped;
  r.interrupted = true;
  r.ended_at = s.elapsed();
  s.heard_through.erase(id);
  if (s.sw->journal)
    s.sw->journal->updated(r);
  s.table->event(1, "trial " + id + " interrupted");
  if (s.idle())
    complete(self);
}

// The disk work before trial `id`'s launch (on the worker) is done: it
// starts from `restore_from`, with `note` (what that work said, "" none)
// on the table. Until then it counted against the limit (`preparing`).
// The sweep may have begun to end meanwhile: then it does not start.
void launch_prepared(tuner_pointer self, const std::string& id, const std::string& restore_from,
                     const std::string& note) {
  auto& s = self->state;
  if (s.preparing.erase(id) == 0)
    return;  // given up on (abandon_preparing): it ended as never launched
  if (!note.empty())
    s.table->event(1, note);
  if (s.finishing)
    return never_launched(self, id);
  launch_trial(self, id, restore_from);
  redraw(s);
}

namespace {

// The trials that count against the limit.
int busy(const tuner_state& s) {
  return static_cast<int>(s.live.size() + s.exploiting.size() + s.preparing.size());
}

// Takes up the next unfinished trial of a resumed sweep: its exploit, if
// one was pending, else a launch from its resume point.
void resume_next(tuner_pointer self) {
  auto& s = self->state;
  const std::string id = s.resume_queue.front();
  s.resume_queue.pop_front();
  tune::trial_record& r = s.record(id);
  auto pending = s.sw->resumed.pending_exploits.find(id);
  if (pending != s.sw->resumed.pending_exploits.end()) {
    // Its exploit was decided before the driver died, not carried out.
    tune::exploit_plan plan = pending->second;
    s.sw->resumed.pending_exploits.erase(pending);
    start_exploit(self, id, plan);
    return;
  }
  r.status = tune::trial_status::pending;
  r.interrupted = false;
  s.preparing.insert(id);
  resume_point(self, r, [self, id](const std::string& from) {
    self->state.table->event(1, "trial " + id + " resumed " +
                                    (from.empty() ? std::string("from its first epoch")
                                                  : "from " + from));
    launch_prepared(self, id, from, "");
  });
}

// Records trial `id`, the searcher's suggestion `next`, as PENDING (the
// scheduler, the journal and the table hear of it); returns the checkpoint
// it starts from ("" none).
std::string add_trial(tuner_state& s, const std::string& id, const tune::suggestion& next) {
  tune::trial_record r;
  r.id = id;
  r.configuration = next.configuration;
  if (!s.sw->experiment_dir.empty())
    r.checkpoint_dir = s.sw->experiment_dir + "/" + id;
  std::string restore_from;
  if (!next.restore_from.empty()) {
    auto it = s.index.find(next.restore_from);
    if (it != s.index.end() && !s.trials[it->second].checkpoint_dir.empty())
      restore_from = s.trials[it->second].checkpoint_dir;
  }
  s.index[id] = s.trials.size();
  s.trials.push_back(std::move(r));
  s.sw->scheduler->on_add(id, next.configuration);
  if (s.sw->journal)
    s.sw->journal->created(s.record(id));
  s.table->event(1, "trial " + id + " PENDING: " + tune::describe(next.configuration));
  return restore_from;
}

// Starts the searcher's next trial; false when it has none now (it is
// done, or waits for results).
bool start_next(tuner_pointer self) {
  auto& s = self->state;
  std::string id = trial_id(s.next_id);
  tune::suggestion next = s.sw->searcher->suggest(id);
  if (next.what == tune::suggestion::kind::finished) {
    s.searcher_done = true;
    return false;
  }
  if (next.what == tune::suggestion::kind::wait)
    return false;
  ++s.next_id;
  const std::string restore_from = add_trial(s, id, next);
  if (s.record(id).checkpoint_dir.empty()) {
    launch_trial(self, id, restore_from);
    return true;
  }
  // A directory of this id can only be left by a run whose record of
  // the trial was lost with its driver: not this trial's state. It goes
  // (on the worker) before the trial starts.
  s.preparing.insert(id);
  const std::string own = s.sw->experiment_dir, dir = s.record(id).checkpoint_dir;
  const checkpoint::owner me = s.sw->owner;
  off_thread<std::string>(
      self, [own, me, dir] { return remove_own(own, me, dir); },
      [self, id, restore_from](std::string& note) {
        launch_prepared(self, id, restore_from, note);
      });
  return true;
}

} // namespace

// Starts trials while the limit allows: first the unfinished trials of a
// resumed sweep, then new ones while the searcher has some.
void fill(tuner_pointer self) {
  auto& s = self->state;
  while (!s.finishing && !s.resume_queue.empty() && busy(s) < s.sw->limit)
    resume_next(self);
  while (!s.finishing && !s.searcher_done && busy(s) < s.sw->limit)
    if (!start_next(self))
      break;
  if (s.idle()) {
    if (!s.searcher_done && !s.finishing)
      finish(self, "the searcher waits for results but no trial is running");
    complete(self);
    return;
  }
  redraw(s);
}

namespace {

// Trial `id`'s run failed with `error` (after its trainer's recovery). A
// trial the scheduler or a stopper had ended (`decided`) is not ended
// again; too many failures end the sweep.
void ended_failed(tuner_pointer self, const std::string& id, const std::string& error,
                  bool decided) {
  auto& s = self->state;
  tune::trial_record& r = s.record(id);
  r.status = tune::trial_status::error;
  r.error = error;
  if (!decided) {
    s.sw->scheduler->on_end(id, tune::trial_end::failed);
    s.sw->searcher->on_end(id, tune::trial_end::failed);
  }
  if (s.sw->journal) {
    if (decided)
      s.sw->journal->updated(r);
    else
      s.sw->journal->ended(r, tune::trial_end::failed);
  }
  ++s.failed;
  s.table->event(1, "trial " + id + " ERROR: " + error);
  int most = s.sw->config.max_failed_trials;
  if (most >= 0 && s.failed > most)
    finish(self, std::to_string(s.failed) + " trials failed (max_failed_trials " +
                     std::to_string(most) + ")");
}

// Trial `id`'s run ended with no scheduler or stopper deciding it:
// interrupted (the sweep is ending) or out of epochs without a stopper
// saying so: the latter ran its course.
void ended_undecided(tuner_state& s, const std::string& id, bool interrupted) {
  tune::trial_record& r = s.record(id);
  r.status = interrupted ? tune::trial_status::stopped : tune::trial_status::terminated;
  if (interrupted) {
    r.interrupted = true;
    if (s.sw->journal)
      s.sw->journal->updated(r);  // not ended: a resume continues it
  } else {
    s.sw->scheduler->on_end(id, tune::trial_end::completed);
    s.sw->searcher->on_end(id, tune::trial_end::completed);
    if (s.sw->journal)
      s.sw->journal->ended(r, tune::trial_end::completed);
  }
  s.table->event(1, "trial " + id + (interrupted ? " interrupted" : " TERMINATED"));
}

} // namespace

void on_end(tuner_pointer self, const std::string& id, int32_t restarts, const std::string& error,
            bool interrupted) {
  auto& s = self->state;
  auto lt = s.live.find(id);
  if (lt == s.live.end())
    return;
  tune::trial_record& r = s.record(id);
  r.restarts += restarts;  // every run of the trial counts
  r.ended_at = s.elapsed();
  // Every run of the trial counts (a PBT exploit or a resume starts another).
  r.seconds += std::chrono::duration<double>(clock_type::now() - lt->second.since).count();
  bool decided = lt->second.decided;
  const bool exploit = lt->second.exploit && error.empty() && !s.finishing;
  const tune::exploit_plan plan = lt->second.plan;
  // Told "no more epochs" because the sweep was ending (Ctrl-C, a stopper,
  // too many failures) while between epochs: cut short, not completed.
  interrupted = interrupted || (lt->second.interrupted && r.epochs() < s.sw->config.max_epochs);
  self->demonitor(lt->second.handle.runner);
  s.sw->track(id, nullptr);
  s.live.erase(lt);
  s.progress.erase(id);
  s.heard_through.erase(id);
  s.notes.erase(id);
  if (exploit) {
    start_exploit(self, id, plan);
    return fill(self);
  }
  if (!error.empty()) {
    ended_failed(self, id, error, decided);
  } else if (!decided) {
    ended_undecided(s, id, interrupted);
  } else {
    if (s.sw->journal)
      s.sw->journal->updated(r);
    s.table->event(1, "trial " + id + " " + tune::to_string(r.status) + " after " +
                          std::to_string(r.epochs()) + " epochs");
  }
  fill(self);
}

} // namespace dtrain::actors::sweep_detail
