#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::actors {

/// An experiment_store whose calls run on a job_thread, in the order they
/// were made: what the tuner's journal writes through, so that the tuner
/// actor never waits on its store (a slow disk, a locked SQLite file, or a
/// service_client, which holds its lock through a flush's round trip).
///
/// Writes are queued and return ok at once; their errors, like the
/// wrapped store's own, come back from the next flush(). Reads and flush()
/// wait for their job: call them where blocking is allowed (not on an
/// actor), never from a job on the same worker (post() is for those). A
/// call made after the worker stopped, or whose job starts after close(),
/// fails with `unavailable` (a write: silently dropped).
///
/// close() ends every use of the wrapped store: a job may outlive this
/// object on a worker left running (a directory removal stuck on a hung
/// disk), but it reaches the wrapped store only through a handle that
/// close() releases, on its own thread, once no call is in flight. So a
/// store that depends on something its owner destroys next (a
/// service_client and its actor system) is never used, nor destroyed, by
/// a job after close() returned. Thread-safe.
class queued_store final : public experiments::experiment_store {
public:
  queued_store(std::shared_ptr<experiments::experiment_store> inner, std::shared_ptr<job_thread> worker);
  /// Closes.
  ~queued_store() override;

  /// Waits for the job in the wrapped store, if any (no bound of its own:
  /// the wrapped store's bound on one call, a service_client's request
  /// timeout, times the calls of that job: one, or those of a post()ed
  /// job), then releases the wrapped store: jobs not started yet run
  /// without it. A second call returns at once.
  void close();

  /// Runs `job` on the worker after every call made before it, with the
  /// wrapped store and the write errors kept since the last flush (then
  /// forgotten: `job` reports them). False when the worker has stopped.
  bool post(std::function<void(experiments::experiment_store& inner, status write_errors)> job);

  result<int64_t> create_experiment(const experiments::experiment_row& e) override;
  status update_experiment(const experiments::experiment_row& e) override;
  result<experiments::experiment_row> experiment(int64_t id) override;
  result<std::vector<experiments::experiment_row>> experiments() override;
  status delete_experiment(int64_t id) override;
  status put_trial(const experiments::trial_row& t) override;
  result<std::vector<experiments::trial_row>> trials(int64_t experiment) override;
  status add_metrics(const std::vector<experiments::metric_row>& rows) override;
  result<std::vector<experiments::metric_row>> metrics(int64_t experiment,
                                                 const std::string& trial = "") override;
  status put_checkpoint(const experiments::checkpoint_row& c) override;
  result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t experiment,
                                                         const std::string& trial = "") override;
  status add_lineage(const experiments::lineage_row& l) override;
  result<std::vector<experiments::lineage_row>> lineage(int64_t experiment) override;
  status add_event(const experiments::event_row& e) override;
  result<std::vector<experiments::event_row>> events(int64_t experiment,
                                               const std::string& trial = "") override;
  status flush() override;
  std::string where() const override { return where_; }

private:
  struct shared;
  status write(std::function<status(experiments::experiment_store&)> call);
  template <class T>
  result<T> wait_for(std::function<result<T>(experiments::experiment_store&)> call);

  std::shared_ptr<shared> shared_;
  std::shared_ptr<job_thread> worker_;
  std::string where_;
};

} // namespace dtrain::actors
