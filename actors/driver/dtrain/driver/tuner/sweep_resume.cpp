// A stored sweep continues (tune_config::resume): its events replayed into
// the searcher, scheduler and stoppers, the journal opened where the store
// stands, the actor's state taken from the replay, and each unfinished
// trial started again from the right checkpoint.
#include <string>

#include "dtrain/driver/tuner/resume_scan.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

// Where an unfinished trial of a resumed sweep starts again, given to
// `then` ("" to start over). The checkpoint of the epoch right after its
// last stored report, when its manifest carries that epoch's training
// metrics (the driver died between the checkpoint and the report): the
// trial goes on from it and reports that epoch first (report_restored),
// so the scheduler hears it as it would have. Else its newest checkpoint
// no newer than its last stored report: epochs after it train again,
// their reports heard once (heard_through). A trial whose exploit copied
// a checkpoint after its last report stands at the copy's epoch instead
// (the copy replaced its own checkpoints). Only a checkpoint that
// verifies in full is restored: an invalid one is skipped for the next
// older, said on the table. The disk is read on the worker (resume_scan).
void resume_point(tuner_pointer self, const tune::trial_record& r,
                  std::function<void(const std::string& from)> then) {
  auto& s = self->state;
  int64_t stands_at = r.epochs();
  bool exploited_here = false;
  auto& exploited = s.sw->resumed.exploited_epochs;
  if (auto it = exploited.find(r.id); it != exploited.end()) {
    stands_at = it->second;
    exploited.erase(it);  // once: its next reports count again
    exploited_here = true;
  }
  const std::string id = r.id, dir = r.checkpoint_dir, own = s.sw->experiment_dir;
  const checkpoint::owner me = s.sw->owner;
  off_thread<resume_scan>(
      self, [=] { return scan_for_resume(id, dir, stands_at, exploited_here, own, me); },
      [self, id, then](resume_scan& scan) {
        auto& st = self->state;
        for (const auto& note : scan.notes)
          st.table->event(1, note);
        st.checkpoints[id] = scan.on_disk;
        if (scan.unreported) {
          st.report_restored.insert(id);
          st.heard_through.erase(id);
        } else {
          st.report_restored.erase(id);
          if (scan.restored_at < scan.stands_at)
            st.heard_through[id] = scan.stands_at;
          else
            st.heard_through.erase(id);
        }
        then(scan.from);
      });
}

namespace {

// A trial that ended at a report whose end record was lost with the
// driver (the replay ended it in the searcher and scheduler already):
// its end is recorded now, or the store would keep it RUNNING.
void record_lost_ends(sweep& sw) {
  for (const auto& row : sw.resumed.rows)
    if (row.seq_ended == 0 && sw.resumed.decided.count(row.id) != 0)
      for (const auto& r : sw.resumed.trials)
        if (r.id == row.id)
          sw.journal->ended(r, r.status == tune::trial_status::stopped ? tune::trial_end::stopped
                                                                      : tune::trial_end::completed);
}

} // namespace

status open_records(sweep& sw) {
  const tune_config& c = sw.config;
  int64_t next_seq = 1;
  if (c.resume) {
    auto replayed = tune::replay(*c.store, c.experiment_id, *sw.searcher, *sw.scheduler,
                                 sw.stoppers, c, !c.force);
    if (!replayed)
      return replayed.error();
    sw.resumed = std::move(*replayed);
    next_seq = sw.resumed.next_seq;
  }
  sw.store = std::make_shared<queued_store>(c.store, sw.worker);
  sw.journal = std::make_unique<tune::journal>(sw.store, c.experiment_id, c.metric, c.direction,
                                               next_seq);
  sw.journal->adopt(sw.resumed.rows);
  record_lost_ends(sw);
  return status::ok();
}

void adopt_resumed(tuner_state& s) {
  sweep& sw = *s.sw;
  // A resumed sweep starts where the store says it was.
  s.trials = std::move(sw.resumed.trials);
  for (size_t i = 0; i < s.trials.size(); ++i) {
    s.index[s.trials[i].id] = i;
    if (sw.resumed.unfinished.count(s.trials[i].id) != 0)
      s.resume_queue.push_back(s.trials[i].id);
  }
  s.next_id = sw.resumed.next_trial;
  s.failed = sw.resumed.failed;
  if (!sw.resumed.sweep_done.empty()) {  // a stopper had ended it: nothing to run
    s.stop_reason = sw.resumed.sweep_done;
    s.finishing = true;
  }
}

} // namespace dtrain::actors::sweep_detail
