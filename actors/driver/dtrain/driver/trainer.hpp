#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dtrain/api/config.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/driver/plugin_shipping.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// The trainer's configuration and events are the public API's
/// (api/config.hpp): one struct for the library, the command line and
/// driver programs.
using trainer_config = dtrain::trainer_config;
using trainer_event = dtrain::trainer_event;

/// The trainer configuration an experiment file describes.
trainer_config trainer_config_from(const experiments::experiment& e);

/// A trainer's id, what the head knows its placement by:
/// "<name>-<host>-<pid>-<16 random hex digits>-<n>". The random part (64
/// bits from the system's CSPRNG, drawn for every id) keeps ids apart
/// where host name and pid are not (containers with one host name, each
/// its own pid 1). Thread-safe.
std::string make_trainer_id(const std::string& name, const std::string& host, int64_t pid);

/// The driver's handle on a group of replicas training data-parallel
/// (Ray's trainer): placed on the cluster all or nothing, set up through a
/// rendezvous store actor owned here, driven epoch by epoch.
///
/// Every call blocks the calling thread until all replicas answer or the
/// call's timeout passes; errors name the replica (rank) and what it said.
/// The *_async variants run the same call on a thread of their own and
/// return a future (for the tuner). Not thread-safe: one call at a time.
/// shutdown() (or the destructor) stops the replicas and frees their slots.
class trainer {
public:
  /// Places and starts the replicas and sets them up; fails with the
  /// placement's reason (what is missing) or the first replica's error.
  static result<std::unique_ptr<trainer>> create(cluster& c, const trainer_config& config);
  ~trainer();

  /// One epoch on every replica; the chief's metrics (averaged over the
  /// group when average_training_metrics), the operator's own in `extra`. After a failure and recovery
  /// the epoch number may go back to the restored checkpoint's: drive
  /// loops by metrics_msg::epoch, not by counting calls.
  result<metrics_msg> train();
  /// Validation metrics (the chief's; all replicas hold the same model),
  /// the operator's validation_step() metrics in `extra`.
  result<metrics_msg> validate();
  status save(const std::string& path);
  status restore(const std::string& path);
  /// The trained parameters (flat, in layer order), from the chief.
  result<std::vector<float>> get_model();
  /// A hash of every replica's parameters, in rank order (equal hashes:
  /// bitwise identical replicas).
  result<std::vector<uint64_t>> parameter_hashes();
  status shutdown();
  /// The number of replicas now (below num_replicas while an elastic group
  /// runs short of slots).
  int world_size() const { return static_cast<int>(placement_.size()); }
  /// Asks the group to stop (Determined's preemption): the epoch in
  /// progress ends at the replicas' next check (every 16 steps, the same
  /// step on all), train() saves a checkpoint that records where the epoch
  /// stopped (when checkpoint_dir is set) and returns metrics with
  /// preempted = true. Safe to call from another thread while train() runs
  /// (also during a recovery, when it reaches the chief of the new group or
  /// fails with aborted).
  status preempt();

  std::future<result<metrics_msg>> train_async();
  std::future<result<metrics_msg>> validate_async();

  const trainer_config& config() const { return config_; }
  /// A failure the trainer noticed: when, and what it was.
  struct failure {
    std::chrono::steady_clock::time_point noticed;
    std::string cause;
  };
  /// Failures recovered from (or given up on) so far.
  const std::vector<failure>& failures() const { return failures_; }
  int generation() const { return generation_; }
  const std::vector<assignment>& placement() const { return placement_; }
  /// Seconds from create() to the replicas being ready.
  double startup_seconds() const { return startup_seconds_; }
  /// The replicas' handles, in rank order, and the cluster they run on (for
  /// work that goes to replicas one by one: batch inference, prediction.hpp).
  const std::vector<replica_actor>& replicas() const { return replicas_; }
  /// What every message to those replicas carries first (replica_spec::
  /// capability), in the same rank order: one secret per replica, drawn
  /// when it is spawned (a new group after a failure gets new ones), so a
  /// node learns only those of the replicas it hosts. Keep them in this
  /// process.
  const std::vector<std::string>& replica_capabilities() const { return capabilities_; }
  cluster& cluster_of() { return cluster_; }
  /// How many plugin libraries this trainer sent to nodes (a node that has
  /// a plugin loaded already is not sent it again).
  int plugins_sent() const { return plugins_sent_; }

private:
  trainer(cluster& c, const trainer_config& config) : cluster_(c), config_(config) {}
  status start(bool recovering);
  status place(bool recovering);
  status try_place(int n);
  status spawn_all();
  status equip_node(const assignment& a);
  status recover(status cause);
  status reform();
  status maybe_grow();
  int min_replicas() const;
  void stop_replicas();
  void release_slots();
  template <class Reply, class Atom, class... Ts>
  result<std::vector<Reply>> ask_with_recovery(std::chrono::milliseconds timeout,
                                               const std::string& what, Atom atom, Ts... args);
  template <class Reply, class Atom, class... Ts>
  result<std::vector<Reply>> ask_all(std::chrono::milliseconds timeout, const std::string& what,
                                     Atom atom, Ts... args);
  template <class Reply, class Send>
  result<std::vector<Reply>> gather(std::chrono::milliseconds timeout, const std::string& what,
                                    Send send, const std::function<void()>& poll = {});
  /// The replica_spec of rank `rank` at `a` in a group of `world` under
  /// the current generation (a new capability: set it for a survivor).
  result<replica_spec> spec_for(size_t rank, size_t world, const assignment& a) const;
  // Live recovery (trainer_live.cpp).
  bool live() const;
  std::vector<bool> probe_replicas(std::chrono::milliseconds timeout);
  status recover_live(const status& cause);
  status form_live(const std::vector<size_t>& survivors, std::vector<assignment> placement);
  result<std::vector<assignment>> resize_placement(const std::vector<assignment>& keep,
                                                   int extra);
  /// Live growth: asks the head (at most once a second) for the slots
  /// the group lacks; whether it got some (pending_growth_).
  bool reserve_growth();
  /// reserve_growth(), and when it got slots, asks the group to pause at
  /// its next check (every 16 steps) so that the newcomers join at a step
  /// boundary.
  void poll_growth();
  /// Forms the grown group poll_growth() placed (pending_growth_).
  status grow_live();

  cluster& cluster_;
  trainer_config config_;
  std::string id_;
  std::vector<assignment> placement_;
  std::vector<replica_actor> replicas_;
  std::vector<std::string> capabilities_;  // replica_spec::capability of replicas_[i] (256 bits, hex)
  rendezvous_actor store_;
  caf::actor owner_;
  caf::actor progress_sink_;
  /// One of the trainer's notes, to config_.on_note or stderr.
  void note(const std::string& text) const;
  /// One event to config_.on_event (nothing without one).
  void event(const char* kind, int64_t epoch, const std::string& message) const;
  /// After a recovery, the "recovered" event once the group reports an
  /// epoch (train) or where it stands (validate) again.
  void recovered(int64_t epoch, int64_t restored_epoch);
  double startup_seconds_ = 0;
  std::atomic<bool> stopped_{false};  // read by preempt() from other threads
  bool placement_failed_ = false;     // the last start() failed to place
  std::chrono::steady_clock::time_point last_growth_check_{};
  int generation_ = 0;
  int unreachable_node_ = -1;
  // The chief and its capability, for preempt() from another thread while
  // replicas_ changes.
  std::mutex chief_mutex_;
  replica_actor chief_;
  std::string chief_capability_;
  std::vector<failure> failures_;
  int64_t epoch_ = 0;                // the epoch the group is in, as far as it reported
  bool recovery_pending_ = false;    // re-formed after a failure; not reported since
  std::vector<plugin_package> plugins_;
  std::vector<std::string> plugin_hashes_;
  std::set<std::string> equipped_nodes_;  // "address pid" of nodes that have plugins_
  // Live growth placed (the whole group's placement, the present replicas
  // first), waiting for the group to pause; empty: none.
  std::vector<assignment> pending_growth_;
  std::atomic<bool> user_preempted_{false};  // preempt() asked since the last train() answer
  bool last_recovery_live_ = false;  // the last recovery kept the survivors' state
  std::string live_note_;  // what the last live recovery did, for its "recovered" event
  int plugins_sent_ = 0;
};

/// What every epoch report of a trainer carries about its speed and
/// health, beside loss and accuracy (the experiment store keeps them; the
/// dashboard's /metrics shows them per trial): samples_per_second (the
/// epoch line's figure), step_seconds (seconds per optimizer step),
/// allreduce_seconds (the chief's wait in the gradient sync over the
/// epoch) and restarts (the group's recoveries so far). The names are
/// reserved for operators (train::is_reserved_metric).
std::map<std::string, double> speed_metrics(const metrics_msg& m, size_t restarts);


} // namespace dtrain::actors
