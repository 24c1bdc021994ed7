#pragma once

// The tuner's private state (not part of the public API): one sweep, its
// actor's state, the messages between them and the worker, and the steps
// the sweep's files share. tuner.cpp sets a sweep up and runs it;
// sweep_actor.cpp is its actor's state machine; sweep_trials.cpp starts
// and ends trials; sweep_reports.cpp hears their reports; sweep_exploit.cpp
// carries out PBT's exploits; sweep_resume.cpp continues a stored sweep;
// sweep_end.cpp ends the sweep and records its end; sweep_table.cpp draws
// the table. Everything here runs on the tuner actor's thread unless it
// says otherwise.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/driver/tuner/queued_store.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/tune/journal.hpp"
#include "dtrain/tune/table.hpp"

namespace dtrain::actors::sweep_detail {

using clock_type = std::chrono::steady_clock;
using tick_atom = caf::atom_constant<caf::atom("tunetick")>;
// (exploit_done_atom, trial, copied checkpoint or "", error, source epoch,
// the trial's checkpoints after the copy)
using exploit_done_atom = caf::atom_constant<caf::atom("exploited")>;
// (trial_note_atom, trial, line): one of a trial's trainer's notes.
using trial_note_atom = caf::atom_constant<caf::atom("trialnote")>;
// (recorded_atom): the sweep's end is in the store (or could not be).
using recorded_atom = caf::atom_constant<caf::atom("recorded")>;
// (job_done_atom, job): a job on the worker is done; its continuation runs.
using job_done_atom = caf::atom_constant<caf::atom("tunejob")>;
// (record_late_atom): end_seconds passed since the sweep's end was queued.
using record_late_atom = caf::atom_constant<caf::atom("reclate")>;
// (abandon_atom): end_seconds passed since only disk work kept the sweep.
using abandon_atom = caf::atom_constant<caf::atom("abandon")>;

// How a job on the worker reaches the tuner actor: only through here, so
// that fit() can cut every job off the actor system (close()) before its
// caller destroys the cluster. A job left running past that (a disk that
// hangs) then holds no handle of the system and tells no one. Thread-safe.
class tuner_link {
public:
  void open(caf::weak_actor_ptr tuner) {
    std::lock_guard<std::mutex> lock(mutex_);
    tuner_ = std::move(tuner);
  }
  /// After this returns no job sends, nor holds the actor's handle.
  void close() {
    caf::weak_actor_ptr released;
    std::lock_guard<std::mutex> lock(mutex_);
    released.swap(tuner_);
  }
  /// A message to the tuner, unless it is gone or the link closed.
  template <class... Ts>
  void tell(Ts&&... xs) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto strong = tuner_.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), std::forward<Ts>(xs)...);
  }

private:
  std::mutex mutex_;
  caf::weak_actor_ptr tuner_;
};

// Everything one sweep needs, owned by its actor.
struct sweep {
  tune_config config;
  trainer_config trial_template;
  std::vector<std::string> varying;
  std::unique_ptr<tune::searcher> searcher;
  std::unique_ptr<tune::scheduler> scheduler;
  std::vector<std::unique_ptr<tune::stopper>> stoppers;
  trial_launcher launch;
  std::string experiment_dir;
  checkpoint::owner owner;  // whom experiment_dir's marker names
  // Every store call and disk operation of the tuner, in order, off the
  // actor's thread (fit() stops it once the sweep ended).
  std::shared_ptr<job_thread> worker;
  std::shared_ptr<tuner_link> link = std::make_shared<tuner_link>();  // the worker's way back
  std::shared_ptr<queued_store> store;     // config.store through `worker`; null without one
  std::unique_ptr<tune::journal> journal;  // writes to `store`; null without a store
  tune::replayed_sweep resumed;            // what a resume starts from
  int limit = 1;  // trials at once
  std::promise<result<tune::result_grid>> done;
  std::atomic<bool> delivered{false};
  // The live trials' interrupts, outside the actor's state: when the actor
  // ends abnormally (its state already gone) they still stop the trials.
  std::mutex interrupts_mutex;
  std::unordered_map<std::string, std::function<void()>> interrupts;

  // fit() waits on `done`: it is set exactly once, also when the actor
  // ends some other way (an exception in a searcher or scheduler, the
  // actor system going down), then with that error.
  void deliver(result<tune::result_grid> grid) {
    if (!delivered.exchange(true))
      done.set_value(std::move(grid));
  }
  void track(const std::string& id, std::function<void()> interrupt) {
    std::lock_guard<std::mutex> lock(interrupts_mutex);
    if (interrupt)
      interrupts[id] = std::move(interrupt);
    else
      interrupts.erase(id);
  }
  void interrupt_all() {
    std::lock_guard<std::mutex> lock(interrupts_mutex);
    for (auto& [id, interrupt] : interrupts)
      interrupt();
    interrupts.clear();
  }
};

struct live_trial {
  trial_handle handle;
  clock_type::time_point since;
  bool decided = false;      // the scheduler or a stopper ended it already
  bool interrupted = false;  // we asked it to stop mid-epoch
  bool exploit = false;      // PBT: when its run ends, it continues from `plan`
  tune::exploit_plan plan;
};

struct tuner_state {
  std::shared_ptr<sweep> sw;
  std::unique_ptr<tune::trial_table> table;
  std::vector<tune::trial_record> trials;
  std::unordered_map<std::string, size_t> index;
  std::unordered_map<std::string, live_trial> live;
  clock_type::time_point start = clock_type::now();
  bool searcher_done = false;
  bool finishing = false;
  bool completing = false;  // the grid is made; the store records the sweep's end
  tune::result_grid grid;
  std::string stop_reason;
  bool interrupted_by_user = false;  // stop(): the experiment is interrupted, not completed
  int failed = 0;
  int64_t next_id = 0;
  std::deque<std::string> resume_queue;  // unfinished trials of a resumed sweep
  std::map<std::string, tune::exploit_plan> exploiting;  // copying a checkpoint, then relaunched
  std::map<std::string, std::map<int64_t, std::string>> checkpoints;  // trial -> epoch -> dir
  std::map<std::string, progress_msg> progress;  // running trial -> its chief's latest
  std::map<std::string, std::string> notes;      // running trial -> its trainer's latest note
  // A trial started again from a checkpoint older than its last stored
  // report (or from its first epoch) trains those epochs again: through
  // this epoch its reports were heard already, by the journal and by the
  // scheduler (live or in the replay), and are not heard twice.
  std::map<std::string, int64_t> heard_through;
  // Trials whose next run reports the epoch it restores first (resume_point).
  std::set<std::string> report_restored;
  // Trials whose launch waits for disk work on the worker (removing an old
  // directory, finding a resume point): they count against the limit.
  std::set<std::string> preparing;
  // Since when only `preparing` keeps the ending sweep from completing.
  std::optional<clock_type::time_point> preparing_alone_since;
  std::string recording;  // the state the sweep's end records, once queued
  // What runs on the actor when a job on the worker is done, by job.
  std::map<uint64_t, std::function<void()>> continuations;
  uint64_t next_job = 0;

  bool idle() const { return live.empty() && exploiting.empty() && preparing.empty(); }
  double elapsed() const { return std::chrono::duration<double>(clock_type::now() - start).count(); }
  tune::trial_record& record(const std::string& id) { return trials[index.at(id)]; }
};

using tuner_pointer = caf::stateful_actor<tuner_state>*;

// --- sweep_trials.cpp: trials start, run and end ---

std::string trial_id(int64_t n);
/// Starts the runner of trial `id` (its record exists), from `restore_from`
/// when not empty.
void launch_trial(tuner_pointer self, const std::string& id, const std::string& restore_from);
/// Starts trials while the limit allows: first the unfinished trials of a
/// resumed sweep, then new ones while the searcher has some.
void fill(tuner_pointer self);
/// The disk work before trial `id`'s launch is done: it starts (see there).
void launch_prepared(tuner_pointer self, const std::string& id, const std::string& restore_from,
                     const std::string& note);
/// A trial whose launch was prepared while the sweep began to end.
void never_launched(tuner_pointer self, const std::string& id);
/// Trial `id`'s runner ended (trial_end_atom, or it died).
void on_end(tuner_pointer self, const std::string& id, int32_t restarts, const std::string& error,
            bool interrupted);

// --- sweep_reports.cpp: a trial's epoch reports ---

/// One report; the answer tells the runner whether to train another epoch.
bool on_report(tuner_pointer self, const std::string& id, int64_t epoch,
               std::map<std::string, double>& metrics,
               const std::map<int64_t, std::string>& checkpoints);

// --- sweep_exploit.cpp: PBT's exploits ---

/// Copies plan.source's newest valid checkpoint into trial `id`'s
/// directory off the actor's thread; exploit_done follows.
void start_exploit(tuner_pointer self, const std::string& id, const tune::exploit_plan& plan);
void exploit_done(tuner_pointer self, const std::string& id, const std::string& copied,
                  const std::string& error, int64_t source_epoch,
                  const std::map<int64_t, std::string>& now);

// --- sweep_resume.cpp: a stored sweep continues ---

/// Where trial `r` starts again, given to `then` ("" to start over).
void resume_point(tuner_pointer self, const tune::trial_record& r,
                  std::function<void(const std::string& from)> then);
/// Opens the sweep's records in config.store (with config.resume, after
/// replaying the stored events into the searcher, scheduler and stoppers).
/// Before the actor starts; needs config.store and the worker.
status open_records(sweep& sw);
/// The actor's state starts from the replay (sw->resumed), if any.
void adopt_resumed(tuner_state& s);

// --- sweep_end.cpp: the sweep's end ---

/// Ends the sweep: every live trial is asked to stop.
void finish(tuner_pointer self, const std::string& reason);
/// The grid is made; fit() has it once the store recorded the sweep's end.
void complete(tuner_pointer self);
/// The sweep's end is not in the store end_seconds after it was queued.
void record_late(tuner_pointer self);
/// Gives up on trials whose disk work keeps an ending sweep (abandon_atom).
void abandon_preparing(tuner_pointer self);
/// Cuts every job of the worker off the store and the actor system (on
/// fit()'s thread, once the sweep ended).
void close_jobs(sweep& sw);

// --- sweep_table.cpp: the table ---

/// Draws the table when due (or `force`), with the running trials' time so
/// far and their bars.
void redraw(tuner_state& s, bool force = false);

// --- sweep_actor.cpp: the actor ---

caf::behavior tuner_actor(tuner_pointer self, std::shared_ptr<sweep> sw);

// Runs `work` on the worker (it blocks on the disk), then `then` with its
// result on the actor, as the sweep stands then. `work` must own what it
// uses.
template <class T>
void off_thread(tuner_pointer self, std::function<T()> work, std::function<void(T&)> then) {
  auto& s = self->state;
  const uint64_t job = s.next_job++;
  auto out = std::make_shared<T>();
  s.continuations[job] = [out, then = std::move(then)] { then(*out); };
  // The worker stops only after the sweep ended (fit()).
  (void)s.sw->worker->post([work = std::move(work), out, link = s.sw->link, job] {
    *out = work();
    link->tell(job_done_atom::value, job);
  });
}

} // namespace dtrain::actors::sweep_detail
