#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/api/config.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/train/metrics.hpp"
#include "dtrain/tune/space.hpp"
#include "dtrain/tune/sweep.hpp"
#include "dtrain/tune/trial.hpp"

/// dtrain's driver API, all of it in one include: what a driver program
/// describes (api/config.hpp: cluster_options, trainer_config), its
/// handles (its cluster, a trainer's group of replicas, a hyperparameter
/// sweep) and the tuning types they take (tune/space.hpp, tune/sweep.hpp,
/// tune/trial.hpp). CAF-free: each handle holds the driver library's own
/// object behind a pointer, so that a program including this header
/// compiles none of the actor framework, nor OpenSSL. Plugins of training
/// operators include dtrain/plugin/plugin.hpp instead.
///
/// No call throws; errors come back as status/result values that name what
/// is at fault (a replica's rank and what it said, the field of a bad
/// configuration, the head that did not answer).
namespace dtrain {

/// A driver's connection to a cluster (Ray's ray.init()).
///
/// connect() with an address (or $DTRAIN_ADDRESS) attaches to a running
/// head, retrying until connect_timeout; without one it starts an embedded
/// cluster in this process: a head and one node with local_slots CPU
/// slots. Destroying the cluster stops every replica and actor this
/// process hosts; destroy every trainer and tuner made on it first. Not
/// thread-safe; one thread uses a cluster and what is made on it (except
/// trainer::preempt() and tuner::stop()).
class cluster {
public:
  static result<std::unique_ptr<cluster>> connect(const cluster_options& options = {});
  ~cluster();
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  bool embedded() const;
  /// "embedded" or the head's address.
  const std::string& where() const;

private:
  friend class trainer;
  friend class tuner;
  struct impl;
  explicit cluster(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

/// Where one replica of a trainer runs.
struct replica_placement {
  int rank = 0;
  int node = 0;         // the node's id at the head
  std::string address;  // the node's address; "" for this process's own (embedded) node
};

/// The driver's handle on a group of replicas training data-parallel
/// (Ray's TorchTrainer): placed on the cluster all or nothing, driven epoch
/// by epoch.
///
/// Every call blocks the calling thread until all replicas answer or the
/// call's timeout (trainer_config) passes; errors name the replica (rank)
/// and what it said. A failed epoch is recovered as trainer_config's
/// max_failures says. Not thread-safe: one call at a time, except
/// preempt(). shutdown() (or the destructor) stops the replicas and frees
/// their slots. The cluster must outlive the trainer.
class trainer {
public:
  /// Places and starts the replicas and sets them up; fails with the
  /// placement's reason (what is missing) or the first replica's error.
  static result<std::unique_ptr<trainer>> create(cluster& c, const trainer_config& config);
  ~trainer();
  trainer(const trainer&) = delete;
  trainer& operator=(const trainer&) = delete;

  /// One epoch on every replica: the chief's metrics (averaged over the
  /// group when average_training_metrics), the operator's own in `extra`.
  /// After a failure and recovery the epoch number may go back to the
  /// restored checkpoint's: drive loops by epoch_metrics::epoch.
  result<train::epoch_metrics> train();
  /// Validation metrics (the chief's; all replicas hold the same model),
  /// the operator's own in `extra`.
  result<train::epoch_metrics> validate();
  /// A checkpoint of the group's state at `path` (a directory), and back.
  status save(const std::string& path);
  status restore(const std::string& path);
  /// The trained parameters (flat, in layer order), from the chief.
  result<std::vector<float>> get_model();
  /// A hash of every replica's parameters, in rank order (equal hashes:
  /// bitwise identical replicas).
  result<std::vector<uint64_t>> parameter_hashes();
  /// Asks the group to stop: the epoch in progress ends at the replicas'
  /// next check, and train() returns metrics with preempted = true (after a
  /// checkpoint when checkpoint_dir is set). Safe from another thread.
  status preempt();
  status shutdown();

  /// The number of replicas now (below num_replicas while an elastic group
  /// runs short of slots).
  int world_size() const;
  /// Where the replicas run, in rank order.
  std::vector<replica_placement> placement() const;
  const trainer_config& config() const;

private:
  struct impl;
  explicit trainer(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

/// A sweep's settings (Ray's TuneConfig + RunConfig): the searcher,
/// scheduler and stoppers with their knobs (tune::sweep_config), and the
/// sweep's name, checkpoints and report.
struct tune_config : tune::sweep_config {
  /// Names the sweep: trials checkpoint under
  /// <storage>/<experiment>-<YYYYmmdd-HHMMSS>-<token>/<trial id>/.
  std::string experiment = "sweep";
  /// The checkpoint root; "" = the trial template's checkpoint_dir; both
  /// empty = trials keep no checkpoints (a failed trial then restarts from
  /// its first epoch).
  std::string storage;
  /// Where the sweep reports: trial starts and ends, every epoch, and a
  /// table of all trials at the end.
  std::FILE* out = stdout;
  int verbosity = 2;  // 0 silent, 1 trial starts and ends, 2 every epoch
};

/// Runs a hyperparameter sweep (Ray's Tuner): trials drawn by the searcher
/// from `space`, each a trainer group built from `trial_template` with the
/// trial's hyperparameters (template values not in the space are kept), up
/// to max_concurrent_trials at once and never more than the cluster's
/// slots hold. After every epoch the chief's metrics go to the scheduler,
/// which may stop the trial; stoppers may end trials or the sweep. A trial
/// that fails past its trainer's recovery ends in error and the sweep goes
/// on (up to max_failed_trials); a trial that can never fit on the cluster
/// fails fit() at once, naming what is missing. The cluster must outlive
/// the tuner.
class tuner {
public:
  tuner(cluster& c, trainer_config trial_template, tune::space space, tune_config config);
  ~tuner();
  tuner(const tuner&) = delete;
  tuner& operator=(const tuner&) = delete;

  /// Blocks until the sweep ends (or stop()); every trial, errored ones
  /// included. Errors: bad settings (naming the field), a trial that can
  /// never be placed.
  result<tune::result_grid> fit();
  /// Interrupts every trial (each checkpoints when it can), frees their
  /// slots and makes fit() return the grid so far with stop_reason set.
  /// Thread-safe (e.g. from a signal watcher).
  void stop(const std::string& reason = "interrupted");
  /// The checkpoint directory of the last fit() ("" without storage).
  const std::string& experiment_dir() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace dtrain
