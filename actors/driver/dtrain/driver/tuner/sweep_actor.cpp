// The tuner actor's state machine: what each message does. A sweep runs
// (fill) until it finishes (finish: out of trials, a stopper, stop(), too
// many failures), completes once no trial is live (complete), and quits
// once the store recorded its end (recorded_atom) or that took too long
// (record_late_atom). The steps live in the other sweep_*.cpp files.
#include <chrono>
#include <string>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

namespace {

// The actor's state starts from the sweep (and a resumed sweep's replay).
void start_state(tuner_pointer self, const std::shared_ptr<sweep>& sw) {
  auto& s = self->state;
  s.sw = sw;
  sw->link->open(self->ctrl());
  tune::trial_table::options o;
  o.out = sw->config.out;
  o.redraw = sw->config.redraw;
  o.verbosity = sw->config.verbosity;
  s.table = std::make_unique<tune::trial_table>(o, sw->varying, sw->config.metric,
                                                sw->config.direction);
  adopt_resumed(s);
}

// A runner that dies without saying goodbye (it should not) is a failed
// trial, never a sweep waiting forever; an actor that ends before the
// sweep did stops the trials and fails fit().
void watch_ends(tuner_pointer self, const std::shared_ptr<sweep>& sw) {
  self->set_down_handler([self](caf::down_msg& dm) {
    for (auto& [id, t] : self->state.live)
      if (t.handle.runner.address() == dm.source) {
        std::string trial = id;
        on_end(self, trial, 0, "the trial's runner died: " + caf::to_string(dm.reason), false);
        return;
      }
  });
  self->attach_functor([sw](const caf::error& reason) {
    if (sw->delivered.load())
      return;
    sw->interrupt_all();
    sw->deliver(status(error_code::internal,
                       "the tuner actor ended before the sweep did: " + caf::to_string(reason)));
  });
}

void on_trial_up(tuner_pointer self, const std::string& id) {
  auto& st = self->state;
  if (st.index.count(id) != 0 && st.record(id).status == tune::trial_status::pending) {
    st.record(id).status = tune::trial_status::running;
    st.record(id).started_at = st.elapsed();
    if (st.sw->journal)
      st.sw->journal->updated(st.record(id));
    st.table->event(2, "trial " + id + " RUNNING");
    redraw(st);
  }
}

void on_progress(tuner_pointer self, const std::string& id, const progress_msg& p) {
  auto& st = self->state;
  // Late progress of a trial that ended (messages race its end) is dropped.
  if (p.rank != 0 || st.live.count(id) == 0)
    return;
  st.progress[id] = p;
  redraw(st);
}

void on_trial_note(tuner_pointer self, const std::string& id, const std::string& line) {
  auto& st = self->state;
  if (st.live.count(id) == 0)
    return;
  st.notes[id] = line;
  redraw(st, true);
}

void on_job_done(tuner_pointer self, uint64_t job) {
  auto& st = self->state;
  auto it = st.continuations.find(job);
  if (it == st.continuations.end())
    return;
  std::function<void()> then = std::move(it->second);
  st.continuations.erase(it);
  then();
}

// Once a second: the stoppers' time limits, the end of an ending sweep,
// disk work that keeps it, and the table redrawn.
void on_tick(tuner_pointer self) {
  auto& st = self->state;
  if (st.completing)
    return;
  for (auto& stopper : st.sw->stoppers)
    if (stopper->sweep_done(nullptr, st.elapsed())) {
      finish(self, stopper->describe());
      break;
    }
  if (st.finishing && st.idle())
    return complete(self);
  abandon_preparing(self);
  if (st.completing)
    return;
  redraw(st, true);
  self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
}

// stop(): the sweep ends, interrupted (unless it was ending already).
void on_stop(tuner_pointer self, const std::string& reason) {
  if (self->state.completing)
    return;
  if (!self->state.finishing)
    self->state.interrupted_by_user = true;
  finish(self, reason);
  if (self->state.idle())
    complete(self);
}

} // namespace

caf::behavior tuner_actor(tuner_pointer self, std::shared_ptr<sweep> sw) {
  start_state(self, sw);
  watch_ends(self, sw);
  self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
  return {
      [self](trial_up_atom, const std::string& id) { on_trial_up(self, id); },
      [self](trial_report_atom, const std::string& id, int64_t epoch,
             std::map<std::string, double>& metrics,
             const std::map<int64_t, std::string>& checkpoints) {
        return on_report(self, id, epoch, metrics, checkpoints);
      },
      [self](progress_atom, const std::string& id, const progress_msg& p) {
        on_progress(self, id, p);
      },
      [self](trial_note_atom, const std::string& id, const std::string& line) {
        on_trial_note(self, id, line);
      },
      [self](trial_event_atom, const std::string& id, int64_t epoch, const std::string& kind,
             const std::string& message) {
        auto& st = self->state;
        if (st.index.count(id) != 0 && st.sw->journal)
          st.sw->journal->event(st.record(id), epoch, kind, message);
      },
      [self](trial_end_atom, const std::string& id, int32_t restarts, const std::string& error,
             bool interrupted) { on_end(self, id, restarts, error, interrupted); },
      [self](exploit_done_atom, const std::string& id, const std::string& copied,
             const std::string& error, int64_t source_epoch,
             const std::map<int64_t, std::string>& now) {
        exploit_done(self, id, copied, error, source_epoch, now);
      },
      [self](job_done_atom, uint64_t job) { on_job_done(self, job); },
      [self](tick_atom) { on_tick(self); },
      [self](stop_atom, const std::string& reason) { on_stop(self, reason); },
      [self](caf::ok_atom) {
        if (!self->state.completing)
          fill(self);
      },
      [self](recorded_atom) {
        self->state.sw->deliver(std::move(self->state.grid));
        self->quit();
      },
      [self](record_late_atom) { record_late(self); },
      [self](abandon_atom) { abandon_preparing(self); },
  };
}

} // namespace dtrain::actors::sweep_detail
