#pragma once

#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/experiment_protocol.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::experiments {

/// An experiment_store that lives in an experiment service (service.hpp),
/// in this process or at the head of a cluster: what cluster::experiments()
/// returns, so a driver writes the same way on both.
///
/// Reads, create_experiment and delete_experiment are requests, each with
/// `timeout` (30 s by default); the writes (update_experiment, put_trial,
/// add_metrics, put_checkpoint, add_lineage, add_event) are one-way sends that return
/// ok at once, and their errors come back from the next flush(), a request
/// that names every experiment this client wrote: the errors of writes of
/// those experiments (by any client) are returned once, the others stay
/// for their own writers.
/// Every message goes from one actor of this client, so the service sees
/// them in call order: a read sees every earlier write. Errors name the
/// store and the operation: "experiment store at the head 10.0.0.1:7000:
/// add_metrics: ...".
///
/// Every message carries `session`, this process's session token at the
/// head (cluster::session(); "" on a plain cluster), which the service
/// checks (service.hpp): a refused request's error names the operation
/// and the reason.
///
/// Thread-safe (calls are serialized). Must not outlive the actor system
/// it was made with (cluster::experiments() keeps one per cluster).
class service_client final : public experiments::experiment_store {
public:
  /// `where`: "the head HOST:PORT" or the store's path, for messages.
  service_client(caf::actor_system& sys, experiment_service service, std::string session,
                 std::string where, std::chrono::milliseconds timeout = std::chrono::seconds(30));

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
  template <class T, class... Ts>
  result<T> ask(const char* op, const Ts&... xs);
  /// Sends a write of rows of `experiments`.
  template <class... Ts>
  status tell(const std::vector<int64_t>& experiments, const Ts&... xs);
  std::string context(const char* op) const;
  std::string error_context(const caf::error& e, const char* op) const;

  std::mutex mutex_;
  caf::scoped_actor self_;
  experiment_service service_;
  std::string where_;
  std::chrono::milliseconds timeout_;
  std::string session_;  // this process's session token at the head
  // Every experiment this client wrote (what its flush asks the errors
  // of): kept after a flush, since a write that is tried again may fail
  // after it.
  std::set<int64_t> written_;
};

} // namespace dtrain::experiments
