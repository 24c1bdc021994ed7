#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/scheduler.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/stopper.hpp"
#include "dtrain/tune/sweep.hpp"
#include "dtrain/tune/trial.hpp"

namespace dtrain::tune {

/// What a sweep's parts make of one report. The tuner calls judge() for
/// every live report and replay() calls it for every stored one, so a
/// resumed sweep's searcher, scheduler and stoppers go through exactly the
/// calls they went through before the driver died, in the same order: the
/// searcher hears the report, the stoppers and the scheduler judge it, and
/// a trial that ends here is ended in both (on_end).
struct verdict {
  decision scheduled = decision::go_on;
  bool ended = false;            // the scheduler stopped it, or a stopper completed it
  trial_status status = trial_status::running;  // stopped or terminated when ended
  std::string sweep_done;        // a stopper ends the sweep: why ("" no)
};
/// `checkpoint_epoch` > 0: a valid checkpoint of that epoch exists now
/// (told to the scheduler first).
verdict judge(searcher& search, scheduler& sched, std::vector<std::unique_ptr<stopper>>& stoppers,
              const sweep_config& config, const report& rep, int64_t checkpoint_epoch,
              double elapsed_seconds);

/// The sweep's record in the experiment store: every event the tuner sees
/// becomes rows, numbered by one sequence (experiments::experiment_store's seq).
/// Writes are asynchronous in the store; their errors come back from
/// flush(). Used from one thread (the tuner actor).
class journal {
public:
  journal(std::shared_ptr<experiments::experiment_store> s, int64_t experiment, std::string metric,
          mode direction, int64_t next_seq = 1);

  int64_t experiment() const { return experiment_; }
  int64_t next_seq() const { return seq_; }

  /// The trials a continued experiment already has (their creation and
  /// end numbers are kept in every later write of their rows).
  void adopt(const std::vector<experiments::trial_row>& rows);
  void created(const trial_record& r);
  /// The trial's state, times, restarts or error changed.
  void updated(const trial_record& r);
  /// A report (already appended to r.history).
  void reported(const trial_record& r, const report& rep);
  /// A checkpoint of r seen on disk (valid) or gone (not valid).
  void checkpoint(const trial_record& r, int64_t epoch, const std::string& path, bool valid);
  /// The trial's checkpoint directories by epoch went from `before` to
  /// `now` (checkpoint::checkpoint_dirs): new ones recorded valid, gone
  /// ones invalid.
  void checkpoints_changed(const trial_record& r, const std::map<int64_t, std::string>& before,
                           const std::map<int64_t, std::string>& now);
  /// An exploit carried out (`after` set) or failed (`after` empty).
  void exploited(const trial_record& r, const std::string& source, int64_t source_epoch,
                 const config& before, const config* after);
  /// Something happened to r's group of replicas (experiments::event_row's
  /// kinds: failure, recovered, gave_up, shrank, grew): a row for people;
  /// replay() skips it.
  void event(const trial_record& r, int64_t epoch, const std::string& kind,
             const std::string& message);
  /// The trial ended: how (completed, stopped, failed); interrupted
  /// trials are not ended (a resume continues them).
  void ended(const trial_record& r, trial_end how);
  status flush();

private:
  experiments::trial_row row(const trial_record& r) const;

  std::shared_ptr<experiments::experiment_store> store_;
  int64_t experiment_;
  std::string metric_;
  mode direction_;
  int64_t seq_;
  std::map<std::string, int64_t> created_seq_;
  std::map<std::string, int64_t> ended_seq_;
  std::map<std::string, std::string> end_how_;
  // Per trial, kept as reports come so that a report costs the same at
  // epoch 2,000 as at epoch 2: the best value so far and the
  // configuration's JSON (changed only by an exploit).
  std::map<std::string, double> best_;
  std::map<std::string, std::string> json_;
};

/// A sweep rebuilt from the store (replay()).
struct replayed_sweep {
  std::vector<trial_record> trials;          // in creation order, histories included
  std::vector<experiments::trial_row> rows;        // as stored (journal::adopt)
  std::set<std::string> unfinished;          // created, never ended: run them again
  std::map<std::string, exploit_plan> pending_exploits;  // decided, not carried out
  std::map<std::string, int64_t> checkpoint_epochs;      // trial -> newest epoch seen
  std::set<std::string> decided;             // ended at a report (judge)
  // trial -> the epoch of the checkpoint its exploit copied, when that
  // exploit came after its last report: it continues from the copy.
  std::map<std::string, int64_t> exploited_epochs;
  int failed = 0;
  int64_t next_seq = 1;
  int64_t next_trial = 0;                    // the number of the next new trial
  std::string sweep_done;                    // a stopper had ended the sweep
};

/// Replays experiment `experiment`'s stored events, in seq order, into a
/// fresh searcher, scheduler and stoppers made from the same settings
/// (same seed): every trial creation is a suggest() (which must give a
/// trial: the searcher's random generator and grid position move as they
/// did), every report goes through judge(), every exploit and end through
/// the same calls the tuner made. With `check_configs`, a suggestion that
/// differs from the stored configuration is an error naming the trial (the
/// sweep is not the one stored); without, the stored one wins (the
/// scheduler's on_add hears it too), and so does a stored exploit the
/// scheduler no longer decides.
result<replayed_sweep> replay(experiments::experiment_store& s, int64_t experiment, searcher& search,
                              scheduler& sched, std::vector<std::unique_ptr<stopper>>& stoppers,
                              const sweep_config& config, bool check_configs);

/// One past the greatest seq of experiment `experiment`'s rows, events
/// included (1 for none):
/// where a journal of a continued experiment starts.
result<int64_t> next_sequence(experiments::experiment_store& s, int64_t experiment);

/// trial_status and the store's state names ("PENDING", ...; "INTERRUPTED"
/// for a trial cut short by the end of its sweep).
std::string state_name(const trial_record& r);

} // namespace dtrain::tune
