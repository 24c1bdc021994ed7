// The sweep's end: live trials are asked to stop, the grid is made, the
// experiment's row records how the sweep ended, and fit() is told; with
// bounds on how long disk work and the store may hold that up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

// Ends the sweep: every live trial is asked to stop; fit() returns once
// the last one has freed its slots.
void finish(tuner_pointer self, const std::string& reason) {
  auto& s = self->state;
  if (!s.finishing && !reason.empty())
    s.stop_reason = reason;
  s.finishing = true;
  for (auto& [id, t] : s.live)
    if (!t.interrupted) {
      t.interrupted = true;
      t.handle.interrupt();
    }
}

namespace {

// The experiment's row says how the sweep ended: completed (out of
// trials, or a stopper ended it), interrupted (stop(): a resume continues
// it) or failed (too many failed trials). On the store's worker, after
// every write queued before it; recorded_atom then tells the tuner.
// False when there is nothing to record.
bool record_outcome(tuner_pointer self) {
  auto& s = self->state;
  auto& sw = *s.sw;
  if (!sw.journal)
    return false;
  const int most = sw.config.max_failed_trials;
  const std::string state = s.interrupted_by_user                      ? "interrupted"
                            : (most >= 0 && s.failed > most) ? "failed"
                                                             : "completed";
  const int64_t id = sw.config.experiment_id;
  const std::string message = s.stop_reason;
  s.recording = state;
  return sw.store->post([id, state, message, link = sw.link](experiments::experiment_store& store,
                                                             status kept) {
    auto row = store.experiment(id);
    status flushed = row.to_status();
    if (row) {
      row->state = state;
      row->message = message;
      row->updated_at = row->ended_at =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      row->owner.clear();
      const status updated = store.update_experiment(*row);
      const status stored = store.flush();
      flushed = !kept ? kept : !updated ? updated : stored;
    }
    if (!flushed)
      std::fprintf(stderr, "dtrain: recording the sweep in %s: %s\n", store.where().c_str(),
                   flushed.to_string().c_str());
    link->tell(recorded_atom::value);
  });
}

std::chrono::milliseconds end_bound(const tune_config& c) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, c.end_seconds) * 1000));
}

} // namespace

// The sweep ends: the grid is made now, and fit() has it once the store
// recorded the sweep's end.
void complete(tuner_pointer self) {
  auto& s = self->state;
  if (s.completing)
    return;
  s.completing = true;
  s.grid.trials = s.trials;
  s.grid.metric = s.sw->config.metric;
  s.grid.direction = s.sw->config.direction;
  s.grid.objectives = s.sw->config.objectives;    // mo
  s.grid.constraints = s.sw->config.constraints;  // mo
  s.grid.stop_reason = s.stop_reason;
  redraw(s, true);
  s.table->summary(s.grid, s.elapsed());
  if (!record_outcome(self)) {
    s.sw->deliver(std::move(s.grid));
    self->quit();
    return;
  }
  self->delayed_send(self, end_bound(s.sw->config), record_late_atom::value);
}

// end_seconds after the sweep's end was queued it is still not in the
// store (queued behind a store call or disk work that hangs): fit() fails,
// naming what was not recorded, rather than wait on.
void record_late(tuner_pointer self) {
  auto& sw = *self->state.sw;
  char bound[32];
  std::snprintf(bound, sizeof bound, "%g", sw.config.end_seconds);
  sw.deliver(status(error_code::timeout,
                    "tune: the sweep's end (experiment " + std::to_string(sw.config.experiment_id) +
                        " " + self->state.recording + ") was not recorded in " +
                        sw.config.store->where() + " within " + bound +
                        " s (end_seconds): the tuner's worker is still in an earlier store call "
                        "or disk operation, with " + std::to_string(sw.worker->queued()) +
                        " job(s) queued; the store may still say it runs"));
  self->quit();
}

// The sweep ends and only trials whose disk work (a removal, a resume
// scan) is still under way keep it from completing: end_seconds after a
// tick first saw that (a disk that hangs; abandon_atom then), they end as
// never launched, so that stop() returns; their work's results, if they
// ever come, are ignored (launch_prepared).
void abandon_preparing(tuner_pointer self) {
  auto& s = self->state;
  if (s.completing || !s.finishing || !s.live.empty() || !s.exploiting.empty() ||
      s.preparing.empty()) {
    s.preparing_alone_since.reset();
    return;
  }
  const auto now = clock_type::now();
  if (!s.preparing_alone_since) {
    s.preparing_alone_since = now;
    self->delayed_send(self, end_bound(s.sw->config), abandon_atom::value);
    return;
  }
  if (now - *s.preparing_alone_since < end_bound(s.sw->config))
    return;  // an earlier wait's message: the newer one comes
  const std::set<std::string> ids = s.preparing;
  for (const auto& id : ids) {
    s.table->event(1, "trial " + id + ": its disk work did not end in time; not launched");
    s.preparing.erase(id);
    never_launched(self, id);  // the last one completes the sweep
  }
}

// After the sweep, before fit() returns (its caller may destroy the
// cluster next): no job on the worker may reach the store (a
// service_client of the cluster's actor system) or the actor system any
// more. The store call in flight ends (bounded by the store itself), then
// the store and the tuner's handle are released here; the jobs not
// started are dropped; one still in disk work 100 ms later (a disk that
// hangs) is left to end on its own, reaching neither.
void close_jobs(sweep& sw) {
  if (sw.store)
    sw.store->close();
  sw.link->close();
  sw.worker->drop_queued();
  sw.worker->stop(std::chrono::milliseconds(100));
}

} // namespace dtrain::actors::sweep_detail
