// A trial's epoch reports: recorded, told to the journal with the trial's
// checkpoints, heard by the searcher and judged by the stoppers and the
// scheduler, whose verdict says whether the trial trains on.
#include <cstdio>
#include <limits>
#include <string>

#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

namespace {

// The checkpoints of trial `r` on disk now (`now`, listed by its runner),
// told to the journal (new ones, and those retention removed); the epoch
// of the report's checkpoint when there is one (0 otherwise).
int64_t note_checkpoints(tuner_state& s, const tune::trial_record& r, int64_t epoch,
                         const std::map<int64_t, std::string>& now) {
  if (r.checkpoint_dir.empty())
    return 0;
  auto& before = s.checkpoints[r.id];
  if (s.sw->journal)
    s.sw->journal->checkpoints_changed(r, before, now);
  before = now;
  return now.count(epoch) != 0 ? epoch : 0;
}

// A report of an epoch heard before the trial started again (heard_through):
// only its checkpoints are new. Whether the trial trains on.
bool heard_again(tuner_state& s, const live_trial& t, const tune::trial_record& r,
                 const std::string& id, int64_t epoch,
                 const std::map<int64_t, std::string>& checkpoints) {
  (void)note_checkpoints(s, r, epoch, checkpoints);
  s.table->event(2, "trial " + id + " epoch " + std::to_string(epoch) +
                        ": trained again (its report was heard before the restart)");
  redraw(s);
  return !t.interrupted && !s.finishing;
}

// What the table says of report `rep`: its epoch and the sweep's metric.
std::string report_line(const tuner_state& s, const tune::report& rep) {
  auto it = rep.metrics.find(s.sw->config.metric);
  double value = it == rep.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  char line[256];
  std::snprintf(line, sizeof line, "trial %s epoch %lld: %s %.4f", rep.trial.c_str(),
                static_cast<long long>(rep.epoch), s.sw->config.metric.c_str(), value);
  return line;
}

// Carries out verdict `v` on trial `id` (the trial ends, or PBT exploits
// another trial when its run ends) and puts `line` on the table; false
// when the trial's run ends here.
bool act_on(tuner_state& s, live_trial& t, tune::trial_record& r, const std::string& id,
            const tune::verdict& v, const std::string& line) {
  if (v.ended) {
    r.status = v.status;
    t.decided = true;
    if (s.sw->journal)
      s.sw->journal->ended(r, v.status == tune::trial_status::stopped ? tune::trial_end::stopped
                                                                      : tune::trial_end::completed);
    s.table->event(2, line + (v.status == tune::trial_status::stopped
                                  ? " -> STOPPED by the scheduler"
                                  : " -> TERMINATED"));
    return false;
  }
  if (v.scheduled == tune::decision::exploit) {
    t.exploit = true;
    t.plan = s.sw->scheduler->exploit(id);
    s.table->event(2, line + " -> exploits trial " + t.plan.source + ": " +
                          tune::describe(t.plan.configuration));
    return false;
  }
  s.table->event(2, line);
  return true;
}

} // namespace

// One report: record it, let the searcher hear it, ask the stoppers and the
// scheduler (tune::judge, as a resume replays it). The answer tells the
// runner whether to train another epoch.
bool on_report(tuner_pointer self, const std::string& id, int64_t epoch,
               std::map<std::string, double>& metrics,
               const std::map<int64_t, std::string>& checkpoints) {
  auto& s = self->state;
  auto lt = s.live.find(id);
  if (lt == s.live.end() || s.index.count(id) == 0)
    return false;
  tune::trial_record& r = s.record(id);
  r.status = tune::trial_status::running;
  if (auto heard = s.heard_through.find(id); heard != s.heard_through.end() && epoch <= heard->second) {
    if (epoch == heard->second)
      s.heard_through.erase(heard);
    return heard_again(s, lt->second, r, id, epoch, checkpoints);
  }
  tune::report rep{id, epoch, std::move(metrics)};
  r.history.push_back(rep);
  const int64_t checkpoint_epoch = note_checkpoints(s, r, epoch, checkpoints);
  if (s.sw->journal)
    s.sw->journal->reported(r, rep);
  tune::verdict v = tune::judge(*s.sw->searcher, *s.sw->scheduler, s.sw->stoppers, s.sw->config,
                                rep, checkpoint_epoch, s.elapsed());
  bool go_on = !lt->second.interrupted && !s.finishing;
  if (!act_on(s, lt->second, r, id, v, report_line(s, rep)))
    go_on = false;
  if (!v.sweep_done.empty())
    finish(self, v.sweep_done);
  redraw(s);
  return go_on;
}

} // namespace dtrain::actors::sweep_detail
