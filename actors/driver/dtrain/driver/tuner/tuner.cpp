#include "dtrain/driver/tuner/tuner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <filesystem>
#include <future>
#include <functional>
#include <limits>
#include <set>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/driver/progress_text.hpp"
#include "dtrain/driver/tuner/queued_store.hpp"
#include "dtrain/driver/tuner/resume_scan.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/checkpoint_copy.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/checkpoint/verify.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/tune/journal.hpp"
#include "dtrain/tune/table.hpp"

namespace dtrain::actors {

namespace {

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

std::string trial_id(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%05lld", static_cast<long long>(n));
  return buf;
}

std::string headline(tuner_state& s) {
  int running = 0, pending = 0;
  for (const auto& t : s.trials) {
    running += t.status == tune::trial_status::running;
    pending += t.status == tune::trial_status::pending;
  }
  return "sweep " + s.sw->config.experiment + ": " + std::to_string(s.trials.size()) +
         " trials, " + std::to_string(running) + " running, " + std::to_string(pending) +
         " pending";
}

// The bars under the running trials' rows (tune_config::bar_width).
tune::trial_table::bar_lines bars(const tuner_state& s) {
  tune::trial_table::bar_lines out;
  const int width = s.sw->config.bar_width - 3;  // indented 2, one short of the edge
  if (width <= 0)
    return out;
  auto running = [&](const std::string& id) {
    auto it = s.index.find(id);
    return it != s.index.end() && s.trials[it->second].status == tune::trial_status::running;
  };
  for (const auto& [id, p] : s.progress)
    if (running(id))
      out[id] = format_progress(p, s.sw->trial_template.num_replicas, s.sw->config.max_epochs,
                                width);
  // A note (a failure, a recovery) above the bar, cut to the width.
  for (const auto& [id, text] : s.notes)
    if (running(id)) {
      std::string line = text.substr(0, static_cast<size_t>(width));
      auto bar = out.find(id);
      out[id] = bar == out.end() ? line : line + "\n  " + bar->second;
    }
  return out;
}

void redraw(tuner_state& s, bool force = false) {
  if (!s.sw->config.redraw || (!force && !s.table->due()))
    return;
  if (s.live.empty())
    return s.table->show(s.trials, s.elapsed(), headline(s), force, bars(s));
  // Running trials show their time so far (a record counts ended runs).
  std::vector<tune::trial_record> now = s.trials;
  for (const auto& [id, t] : s.live)
    if (auto it = s.index.find(id); it != s.index.end())
      now[it->second].seconds += std::chrono::duration<double>(clock_type::now() - t.since).count();
  s.table->show(now, s.elapsed(), headline(s), force, bars(s));
}

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
  s.progress.erase(id);
  s.notes.erase(id);
  if (s.sw->config.redraw && s.sw->config.bar_width > 0 && !launch.config.on_note) {
    // On stderr the trainer's notes would break the table drawn in place:
    // the latest is shown under the trial's row instead.
    launch.config.on_note = [tuner = caf::actor_cast<caf::weak_actor_ptr>(self), id,
                             prefix = "dtrain: trainer " + launch.config.name + ": "](
                                const std::string& line) {
      // Under its trial's row the trainer's name says nothing new.
      std::string text = line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line;
      if (auto strong = tuner.lock())
        caf::anon_send(caf::actor_cast<caf::actor>(strong), trial_note_atom::value, id,
                       std::move(text));
    };
  }
  if (s.sw->config.redraw && s.sw->config.bar_width > 0) {
    // The chief's progress comes to this actor, tagged with the trial. A
    // weak handle: the trainer keeps its configuration (and this function)
    // for as long as it runs, which must not keep the tuner alive.
    launch.config.progress_seconds = s.sw->config.progress_seconds;
    launch.config.progress_all_ranks = false;
    launch.config.on_progress = [tuner = caf::actor_cast<caf::weak_actor_ptr>(self), id,
                                 previous = launch.config.on_progress](const progress_msg& p) {
      if (previous)
        previous(p);
      if (auto strong = tuner.lock())
        caf::anon_send(caf::actor_cast<caf::actor>(strong), progress_atom::value, id, p);
    };
  }
  live_trial t;
  t.handle = s.sw->launch(self->system(), caf::actor_cast<caf::actor>(self), launch);
  t.since = clock_type::now();
  self->monitor(t.handle.runner);
  s.sw->track(id, t.handle.interrupt);
  s.live.emplace(id, std::move(t));
}

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

void start_exploit(tuner_pointer self, const std::string& id, const tune::exploit_plan& plan);

// Starts trials while the limit allows: first the unfinished trials of a
// resumed sweep, then new ones while the searcher has some.
void fill(tuner_pointer self) {
  auto& s = self->state;
  auto busy = [&] {
    return static_cast<int>(s.live.size() + s.exploiting.size() + s.preparing.size());
  };
  while (!s.finishing && !s.resume_queue.empty() && busy() < s.sw->limit) {
    const std::string id = s.resume_queue.front();
    s.resume_queue.pop_front();
    tune::trial_record& r = s.record(id);
    auto pending = s.sw->resumed.pending_exploits.find(id);
    if (pending != s.sw->resumed.pending_exploits.end()) {
      // Its exploit was decided before the driver died, not carried out.
      tune::exploit_plan plan = pending->second;
      s.sw->resumed.pending_exploits.erase(pending);
      start_exploit(self, id, plan);
      continue;
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
  while (!s.finishing && !s.searcher_done && busy() < s.sw->limit) {
    std::string id = trial_id(s.next_id);
    tune::suggestion next = s.sw->searcher->suggest(id);
    if (next.what == tune::suggestion::kind::finished) {
      s.searcher_done = true;
      break;
    }
    if (next.what == tune::suggestion::kind::wait)
      break;
    ++s.next_id;
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
    if (s.record(id).checkpoint_dir.empty()) {
      launch_trial(self, id, restore_from);
      continue;
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
  }
  if (s.idle()) {
    if (!s.searcher_done && !s.finishing)
      finish(self, "the searcher waits for results but no trial is running");
    complete(self);
    return;
  }
  redraw(s);
}

// PBT's exploit of trial `id`: copy the source's newest valid checkpoint
// into the trial's own directory (on a thread of its own: file copies
// block), then exploit_done relaunches it from there.
void start_exploit(tuner_pointer self, const std::string& id, const tune::exploit_plan& plan) {
  auto& s = self->state;
  s.exploiting[id] = plan;
  std::string from = s.index.count(plan.source) != 0 ? s.record(plan.source).checkpoint_dir : "";
  std::string to = s.record(id).checkpoint_dir;
  caf::actor tuner = caf::actor_cast<caf::actor>(self);
  const std::string own = s.sw->experiment_dir;
  const checkpoint::owner me = s.sw->owner;
  self->system().spawn<caf::detached>([tuner, id, from, to, own, me](caf::blocking_actor* copier) {
    auto codec = serialization::default_checkpoint_codec();
    // The copy replaces the target's checkpoints: only in the sweep's own directory.
    status mine = checkpoint::check_owner(own, me, "copy a checkpoint into");
    auto copied = !mine          ? result<std::string>(mine)
                  : from.empty() ? result<std::string>(not_found("the source keeps no checkpoints"))
                                 : checkpoint::copy_newest_valid(*codec, from, to);
    int64_t epoch = 0;
    if (copied)
      if (auto m = codec->read_manifest(*copied))
        epoch = m->epoch;
    // Listed here too: the tuner's thread never lists a directory.
    copier->send(tuner, exploit_done_atom::value, id, copied ? *copied : std::string(),
                 copied ? std::string() : copied.error().to_string(), epoch,
                 checkpoint::checkpoint_dirs(to));
  });
}

// The end of trial `id`'s exploit: its checkpoints are `now` (the copy
// replaced them, or the failed exploit's resume point removed some); it
// goes on from `restore_from`, unless the sweep is ending.
void exploit_finished(tuner_pointer self, const std::string& id, const std::string& restore_from,
                      const std::map<int64_t, std::string>& now) {
  auto& s = self->state;
  s.exploiting.erase(id);
  tune::trial_record& r = s.record(id);
  // The copy replaced the trial's own checkpoints: the store hears both.
  if (s.sw->journal)
    s.sw->journal->checkpoints_changed(r, s.checkpoints[id], now);
  s.checkpoints[id] = now;
  if (s.finishing) {  // the sweep ends: a resume continues it from here
    s.heard_through.erase(id);
    s.report_restored.erase(id);
    r.interrupted = true;
    r.status = tune::trial_status::stopped;
    if (s.sw->journal)
      s.sw->journal->updated(r);
    if (s.idle())
      complete(self);
    return;
  }
  r.status = tune::trial_status::pending;
  launch_trial(self, id, restore_from);
  redraw(s);
}

void exploit_done(tuner_pointer self, const std::string& id, const std::string& copied,
                  const std::string& error, int64_t source_epoch,
                  const std::map<int64_t, std::string>& now) {
  auto& s = self->state;
  auto it = s.exploiting.find(id);
  if (it == s.exploiting.end())
    return;
  // It stays in `exploiting` (counted against the limit) until it goes on.
  const tune::exploit_plan plan = it->second;
  tune::trial_record& r = s.record(id);
  const tune::config before = r.configuration;
  if (error.empty()) {
    r.configuration = plan.configuration;
    s.heard_through.erase(id);  // it goes on from the source's epoch: new reports
    s.sw->scheduler->on_exploited(id, plan);
    if (s.sw->journal)
      s.sw->journal->exploited(r, plan.source, source_epoch, before, &r.configuration);
    s.table->event(1, "trial " + id + " continues from trial " + plan.source + "'s epoch " +
                          std::to_string(source_epoch) + " with " + tune::describe(r.configuration));
    return exploit_finished(self, id, copied, now);
  }
  s.sw->scheduler->on_exploit_failed(id);
  if (s.sw->journal)
    s.sw->journal->exploited(r, plan.source, 0, before, nullptr);
  s.table->event(1, "trial " + id + " could not exploit trial " + plan.source + " (" + error +
                        "); it goes on as it was");
  resume_point(self, r, [self, id](const std::string& from) {
    // What the resume point left on disk: it recorded that already.
    auto now = self->state.checkpoints[id];
    exploit_finished(self, id, from, now);
  });
}

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
    (void)note_checkpoints(s, r, epoch, checkpoints);
    s.table->event(2, "trial " + id + " epoch " + std::to_string(epoch) +
                          ": trained again (its report was heard before the restart)");
    redraw(s);
    return !lt->second.interrupted && !s.finishing;
  }
  tune::report rep{id, epoch, std::move(metrics)};
  r.history.push_back(rep);
  const int64_t checkpoint_epoch = note_checkpoints(s, r, epoch, checkpoints);
  if (s.sw->journal)
    s.sw->journal->reported(r, rep);
  tune::verdict v = tune::judge(*s.sw->searcher, *s.sw->scheduler, s.sw->stoppers, s.sw->config,
                                rep, checkpoint_epoch, s.elapsed());
  auto it = rep.metrics.find(s.sw->config.metric);
  double value = it == rep.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  bool go_on = !lt->second.interrupted && !s.finishing;
  char line[256];
  std::snprintf(line, sizeof line, "trial %s epoch %lld: %s %.4f", id.c_str(),
                static_cast<long long>(epoch), s.sw->config.metric.c_str(), value);
  if (v.ended) {
    r.status = v.status;
    lt->second.decided = true;
    if (s.sw->journal)
      s.sw->journal->ended(r, v.status == tune::trial_status::stopped ? tune::trial_end::stopped
                                                                      : tune::trial_end::completed);
    s.table->event(2, std::string(line) + (v.status == tune::trial_status::stopped
                                               ? " -> STOPPED by the scheduler"
                                               : " -> TERMINATED"));
    go_on = false;
  } else if (v.scheduled == tune::decision::exploit) {
    lt->second.exploit = true;
    lt->second.plan = s.sw->scheduler->exploit(id);
    s.table->event(2, std::string(line) + " -> exploits trial " + lt->second.plan.source + ": " +
                          tune::describe(lt->second.plan.configuration));
    go_on = false;
  } else {
    s.table->event(2, line);
  }
  if (!v.sweep_done.empty())
    finish(self, v.sweep_done);
  redraw(s);
  return go_on;
}

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
  } else if (!decided) {
    // Interrupted (the sweep is ending) or out of epochs without a stopper
    // saying so: the latter ran its course.
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
  } else {
    if (s.sw->journal)
      s.sw->journal->updated(r);
    s.table->event(1, "trial " + id + " " + tune::to_string(r.status) + " after " +
                          std::to_string(r.epochs()) + " epochs");
  }
  fill(self);
}

caf::behavior tuner_actor(tuner_pointer self, std::shared_ptr<sweep> sw) {
  auto& s = self->state;
  s.sw = sw;
  sw->link->open(self->ctrl());
  tune::trial_table::options o;
  o.out = sw->config.out;
  o.redraw = sw->config.redraw;
  o.verbosity = sw->config.verbosity;
  s.table = std::make_unique<tune::trial_table>(o, sw->varying, sw->config.metric,
                                                sw->config.direction);
  // A resumed sweep starts where the store says it was.
  s.trials = std::move(sw->resumed.trials);
  for (size_t i = 0; i < s.trials.size(); ++i) {
    s.index[s.trials[i].id] = i;
    if (sw->resumed.unfinished.count(s.trials[i].id) != 0)
      s.resume_queue.push_back(s.trials[i].id);
  }
  s.next_id = sw->resumed.next_trial;
  s.failed = sw->resumed.failed;
  if (!sw->resumed.sweep_done.empty()) {  // a stopper had ended it: nothing to run
    s.stop_reason = sw->resumed.sweep_done;
    s.finishing = true;
  }
  // A runner that dies without saying goodbye (it should not) is a failed
  // trial, never a sweep waiting forever.
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
  self->delayed_send(self, std::chrono::seconds(1), tick_atom::value);
  return {
      [self](trial_up_atom, const std::string& id) {
        auto& st = self->state;
        if (st.index.count(id) != 0 && st.record(id).status == tune::trial_status::pending) {
          st.record(id).status = tune::trial_status::running;
          st.record(id).started_at = st.elapsed();
          if (st.sw->journal)
            st.sw->journal->updated(st.record(id));
          st.table->event(2, "trial " + id + " RUNNING");
          redraw(st);
        }
      },
      [self](trial_report_atom, const std::string& id, int64_t epoch,
             std::map<std::string, double>& metrics,
             const std::map<int64_t, std::string>& checkpoints) {
        return on_report(self, id, epoch, metrics, checkpoints);
      },
      [self](progress_atom, const std::string& id, const progress_msg& p) {
        auto& st = self->state;
        // Late progress of a trial that ended (messages race its end) is dropped.
        if (p.rank != 0 || st.live.count(id) == 0)
          return;
        st.progress[id] = p;
        redraw(st);
      },
      [self](trial_note_atom, const std::string& id, const std::string& line) {
        auto& st = self->state;
        if (st.live.count(id) == 0)
          return;
        st.notes[id] = line;
        redraw(st, true);
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
      [self](job_done_atom, uint64_t job) {
        auto& st = self->state;
        auto it = st.continuations.find(job);
        if (it == st.continuations.end())
          return;
        std::function<void()> then = std::move(it->second);
        st.continuations.erase(it);
        then();
      },
      [self](tick_atom) {
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
      },
      [self](stop_atom, const std::string& reason) {
        if (self->state.completing)
          return;
        if (!self->state.finishing)
          self->state.interrupted_by_user = true;
        finish(self, reason);
        if (self->state.idle())
          complete(self);
      },
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

std::string timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

} // namespace

tuner::tuner(cluster& c, trainer_config trial_template, tune::space space, tune_config config)
  : cluster_(c), template_(std::move(trial_template)), space_(std::move(space)),
    config_(std::move(config)), launcher_(trainer_launcher(c)) {}

tuner::~tuner() { stop("the tuner was destroyed"); }

// The trials that fit at once: the cluster's slots (CPU, or GPUs for a GPU
// template) divided by the slots one trial takes, capped by
// max_concurrent_trials. A trial larger than the whole cluster can never
// run: that fails the sweep before it starts.
status tuner::check_capacity(int& limit) {
  caf::scoped_actor self{cluster_.system()};
  status out;
  cluster_status st;
  self->request(cluster_.head(), std::chrono::seconds(10), status_atom::value, cluster_.session())
      .receive([&](cluster_status& s) { st = std::move(s); },
               [&](caf::error& e) { out = from_caf(e, "asking the head for its slots"); });
  if (!out)
    return out;
  int total = 0;
  std::string per_node;
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    int n = template_.use_gpu ? st.nodes[i].gpus : st.nodes[i].cpu_slots;
    total += n;
    per_node += (per_node.empty() ? "" : ", ") + std::string("node ") + std::to_string(i) + " (" +
                st.nodes[i].host + "): " + std::to_string(n);
  }
  const char* unit = template_.use_gpu ? "GPUs" : "CPU slots";
  int need = template_.min_replicas > 0 ? template_.min_replicas : template_.num_replicas;
  if (need > total)
    return invalid_argument("a trial needs " + std::to_string(need) + " " + unit +
                            " but the cluster has " + std::to_string(total) +
                            (per_node.empty() ? std::string(" (no nodes)") : " (" + per_node + ")") +
                            ": no trial can ever run; add nodes or lower resources.slots_per_trial");
  limit = std::max(1, total / std::max(1, template_.num_replicas));
  if (config_.max_concurrent_trials > 0)
    limit = std::min(limit, config_.max_concurrent_trials);
  return status::ok();
}

result<tune::result_grid> tuner::fit() {
  DTRAIN_RETURN_IF_ERROR(tune::validate(config_).with_context("tune"));
  DTRAIN_RETURN_IF_ERROR(space_.validate().with_context("search space"));
  if (config_.searcher != "tpe")
    if (auto trials = tune::variant_trial_count(space_, config_.num_samples); !trials)
      return trials.error().with_context("tune");
  auto sw = std::make_shared<sweep>();
  sw->config = config_;
  sw->trial_template = template_;
  sw->trial_template.progress_seconds = 0;  // the table reports, not the replicas
  sw->varying = space_.varying();
  if (!searcher_)
    searcher_ = tune::make_searcher(space_, config_);
  if (!scheduler_) {
    DTRAIN_ASSIGN_OR_RETURN(scheduler_, tune::make_scheduler(config_, space_));
  }
  sw->searcher = std::move(searcher_);
  sw->scheduler = std::move(scheduler_);
  sw->stoppers = tune::make_stoppers(config_);
  for (auto& s : extra_stoppers_)
    sw->stoppers.push_back(std::move(s));
  extra_stoppers_.clear();
  sw->launch = launcher_;
  DTRAIN_RETURN_IF_ERROR(check_capacity(sw->limit));
  const bool recorded = config_.store != nullptr && config_.experiment_id > 0;
  DTRAIN_RETURN_IF_ERROR(own_directory(recorded, sw->owner));
  sw->worker = std::make_shared<job_thread>("dtrain-tuner-io");
  sw->experiment_dir = experiment_dir_;
  if (config_.scheduler == "pbt" && experiment_dir_.empty())
    return invalid_argument("tune: scheduler pbt copies checkpoints between trials: set a "
                            "checkpoint directory (checkpoint_storage.host_path)");
  if (config_.resume && !recorded)
    return invalid_argument("tune: resume needs the experiment store and the experiment's id");
  if (recorded) {
    int64_t next_seq = 1;
    if (config_.resume) {
      auto replayed = tune::replay(*config_.store, config_.experiment_id, *sw->searcher,
                                   *sw->scheduler, sw->stoppers, config_, !config_.force);
      if (!replayed)
        return replayed.error();
      sw->resumed = std::move(*replayed);
      next_seq = sw->resumed.next_seq;
    }
    sw->store = std::make_shared<queued_store>(config_.store, sw->worker);
    sw->journal = std::make_unique<tune::journal>(sw->store, config_.experiment_id,
                                                  config_.metric, config_.direction, next_seq);
    sw->journal->adopt(sw->resumed.rows);
    // A trial that ended at a report whose end record was lost with the
    // driver (the replay ended it in the searcher and scheduler already):
    // its end is recorded now, or the store would keep it RUNNING.
    for (const auto& row : sw->resumed.rows)
      if (row.seq_ended == 0 && sw->resumed.decided.count(row.id) != 0)
        for (const auto& r : sw->resumed.trials)
          if (r.id == row.id)
            sw->journal->ended(r, r.status == tune::trial_status::stopped ? tune::trial_end::stopped
                                                                          : tune::trial_end::completed);
  }
  if (config_.verbosity > 0) {
    if (config_.resume) {
      int ended = 0;
      for (const auto& t : sw->resumed.trials)
        ended += sw->resumed.unfinished.count(t.id) == 0;
      std::fprintf(config_.out,
                   "resuming experiment %lld: %zu trials so far, %d ended, %zu to continue\n",
                   static_cast<long long>(config_.experiment_id), sw->resumed.trials.size(), ended,
                   sw->resumed.unfinished.size());
    }
    std::fprintf(config_.out, "sweep %s: %lld trials at most, %d at a time, %lld epochs each; %s\n",
                 config_.experiment.c_str(),
                 static_cast<long long>(sw->searcher->total()), sw->limit,
                 static_cast<long long>(config_.max_epochs), sw->scheduler->describe().c_str());
    if (!experiment_dir_.empty())
      std::fprintf(config_.out, "checkpoints under %s/<trial>\n", experiment_dir_.c_str());
    std::fflush(config_.out);
  }
  auto done = sw->done.get_future();
  {
    std::lock_guard<std::mutex> lock(actor_mutex_);
    actor_ = cluster_.system().spawn(tuner_actor, sw);
    if (!stop_reason_.empty())
      caf::anon_send(actor_, stop_atom::value, stop_reason_);
    else
      caf::anon_send(actor_, caf::ok_atom::value);
  }
  result<tune::result_grid> grid = done.get();
  close_jobs(*sw);
  std::lock_guard<std::mutex> lock(actor_mutex_);
  actor_ = nullptr;
  stop_reason_.clear();  // a stop() that came after the sweep ended is for no one
  return grid;
}

status tuner::own_directory(bool recorded, checkpoint::owner& me) {
  experiment_dir_.clear();
  if (!config_.experiment_dir.empty()) {
    experiment_dir_ = config_.experiment_dir;
    me = config_.owner;
    return checkpoint::check_owner(experiment_dir_, me, "run a sweep in");
  }
  std::string storage = config_.storage.empty() ? template_.checkpoint_dir : config_.storage;
  if (storage.empty())
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(me.token, checkpoint::new_owner_token());
  experiment_dir_ = storage + "/" +
                    (recorded ? std::to_string(config_.experiment_id)
                              : config_.experiment + "-" + timestamp()) +
                    "-" + me.token;
  me.experiment = config_.experiment_id;
  me.created = checkpoint::created_text(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  me.store = config_.store ? config_.store->where() : "";
  me.name = config_.experiment;
  return checkpoint::claim(experiment_dir_, me);
}

void tuner::stop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(actor_mutex_);
  if (actor_)
    caf::anon_send(actor_, stop_atom::value, reason);
  else if (stop_reason_.empty())
    stop_reason_ = reason;
}

} // namespace dtrain::actors
