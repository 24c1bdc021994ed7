#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/space.hpp"
#include "dtrain/tune/sweep.hpp"

namespace dtrain::experiments {

/// One experiment of `dtrain train EXPERIMENT.yaml`: what to train (the
/// operator and its hyperparameters) and how to spread it (slots, batch
/// size, gradient aggregation), in the shape of Determined's experiment
/// configuration. A plain value: cheap to copy, no invariants beyond those
/// `parse_experiment` checks, not synchronised.
///
/// The YAML keys, and the Determined spellings also accepted:
///
///     name: fashion-mnist-mlp          # required
///     operator: mlp_classifier
///     hyperparameters: {lr: 0.001, hidden: [256, 128]}
///     resources: {slots_per_trial: 2, use_gpu: false, backend: auto,
///                 cpus_per_replica: 0}   # threads each CPU replica computes with;
///                                        # 0: its share of the host's cores
///     global_batch_size: 128           # required
///     epochs: 15                       # or searcher.max_length.epochs
///     optimizations: {aggregation_frequency: 1, average_training_metrics: true,
///                     zero_stage: 0, clip_grad_norm: 0,
///                     gradient_compression: none,   # or true / false
///                     precision: fp32,   # GEMM compute: fp32|tf32|bf16|fp16
///                     bucket_cap_mb: 0}  # gradient sync buckets (MiB, as DDP's);
///                                        # 0: 4 on the CPU, 25 on a GPU
///     checkpoint_storage: {host_path: /tmp/ckpt, save_trial_latest: 1}
///     seed: 0                          # or reproducibility.experiment_seed
///     max_restarts: 3                  # or max_failures (Ray's name)
///     recovery: live                   # or checkpoint (trainer_config::recovery)
///     plugins: [build/libmy_ops.so]    # operator libraries (plugin/plugin.hpp)
///
/// `plugins` lists shared libraries of training operators that the trainer
/// loads and ships to the nodes; load_experiment resolves relative paths
/// against the experiment file's directory.
///
/// `checkpoint_storage` may carry Determined's `type: shared_fs`, so that a
/// Determined file loads; it is checked and then ignored.
///
/// A hyperparameter search (`dtrain tune`) takes Determined's typed
/// hyperparameters and searcher section, with dtrain's extras:
///
///     hyperparameters:
///       lr: {type: log, base: 10, minval: -4, maxval: -1.5}  # 10^U(-4, -1.5)
///       width: {type: int, minval: 16, maxval: 256, q: 16}   # inclusive; q: multiples
///       dropout: {type: double, minval: 0.0, maxval: 0.5}
///       hidden: {type: categorical, vals: [[256, 128], [64]]} # a list val: "256,128"
///       act: {type: const, val: relu}                        # = act: relu
///     searcher:
///       name: asha          # single | grid | random | asha | adaptive_asha (= asha)
///       metric: validation_accuracy   # tune::check_metric(): built-in or the operator's own
///       smaller_is_better: false      # default: false for *accuracy metrics, else true
///       max_trials: 16      # random/asha: trials (alias num_samples)
///       num_samples: 1      # grid: repetitions of the grid
///       max_concurrent_trials: 2      # 0: as many as the cluster holds
///       max_length: {epochs: 15}
///       scheduler: asha     # fifo | asha | median | pbt | hyperband; default asha for asha, else fifo
///       divisor: 3          # alias reduction_factor (hyperband's default: 3)
///       grace_period: 2     # epochs (hyperband: alias min_resource, bracket 0's first rung)
///       rule: top_k         # top_k | percentile (asha only)
///       max_resource: 27    # hyperband only: epochs or auto; default max_length.epochs
///       median_warmup_epochs: 0
///       median_min_completed_trials: 5
///       time_budget_seconds: 0        # 0: none
///       stop_threshold: 0.9           # end the sweep when metric reaches it
///       max_failed_trials: -1         # -1: unlimited
///
/// A multi-objective sweep (mo) names its objectives instead of `metric`:
///
///     searcher:
///       name: nsga2         # or random, grid (tpe and schedulers but fifo refuse it)
///       metrics:            # each NAME or {name, mode}; mode as smaller_is_better's default
///         - {name: validation_accuracy, mode: max}
///         - {name: params, mode: min}
///       constraints:        # feasible when every metric <= its max (any searcher)
///         - {metric: memory_mb, max: 4000}
///       max_trials: 200
///       population_size: 50 # nsga2 only, and Optuna's defaults:
///       mutation_prob: 0.1  #   absent: 1 / number of hyperparameters
///       crossover_prob: 0.9
///       swapping_prob: 0.5
///
/// Under `grid` every int, double and log hyperparameter needs `count` (that
/// many evenly spaced points, in the exponent for log) and categoricals are
/// grid dimensions; elsewhere `count` is an error. Typed hyperparameters
/// other than const need a searching searcher (not `single`). Constants
/// (scalars, lists, `type: const`) stay in `hyperparameters`.
struct experiment {
  std::string name;                                    // required
  std::string operator_name = "mlp_classifier";        // YAML key: operator
  /// Scalars as written ("0.001"); a list of scalars joined as "a,b,c".
  std::map<std::string, std::string> hyperparameters;
  int slots_per_trial = 1;                             // resources.slots_per_trial, >= 1
  int min_slots_per_trial = 0;                         // resources.*: elastic down to this; 0 = not
  int cpus_per_replica = 0;                            // resources.*: BLAS threads; 0 = a share of the host
  bool use_gpu = false;                                // resources.use_gpu
  std::string backend = "auto";                        // auto|shm|gloo|hierarchical|nccl
  int64_t global_batch_size = 128;                     // required, >= slots_per_trial
  int64_t epochs = 1;                                  // >= 1
  int aggregation_frequency = 1;                       // optimizations.*, >= 1
  bool average_training_metrics = true;                // optimizations.*
  std::string gradient_compression = "none";           // none|fp16|bf16
  /// optimizations.precision: what GEMMs compute in (tensor/precision.hpp),
  /// fp32|tf32|bf16|fp16; fp16 adds dynamic loss scaling.
  std::string precision = "fp32";
  /// optimizations.bucket_cap_mb: the gradient sync's bucket size in MiB
  /// (PyTorch DDP's bucket_cap_mb); 0: the device's default.
  double bucket_cap_mb = 0;
  /// optimizations.zero_stage: 0, 1 (optimizer state sharded across the
  /// replicas), 2 (also the gradients) or 3 (also the parameters); see
  /// docs/zero.md.
  int zero_stage = 0;
  /// optimizations.clip_grad_norm: the averaged gradient's L2 norm is
  /// clipped to this (torch's clip_grad_norm_); 0: off.
  double clip_grad_norm = 0;
  std::string checkpoint_dir;                          // checkpoint_storage.host_path; "" = none
  int checkpoint_keep = 1;                             // checkpoint_storage.save_trial_latest, >= 0
  /// min_checkpoint_period (Determined's; `seconds` is dtrain's own): one
  /// of {batches: N} (optimizer steps), {epochs: N}, {seconds: S} (of
  /// training). Steps and seconds save asynchronously during an epoch
  /// (trainer_config::checkpoint_every_steps). All 0 = not set: every epoch.
  int checkpoint_every_epochs = 0;
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_seconds = 0;
  uint64_t seed = 0;
  int max_failures = 3;                                // max_restarts, >= 0
  std::string recovery = "live";                       // live | checkpoint (trainer_config::recovery)
  std::vector<std::string> plugins;                    // operator libraries, as written
  /// The typed, searched hyperparameters (never constants); empty unless
  /// has_search.
  tune::space space;
  /// The searcher section. sweep.max_epochs and sweep.seed equal epochs and
  /// seed; metric and direction are kept for `single` too.
  tune::sweep_config sweep;
  bool has_search = false;                             // searcher.name other than single
};

/// The searcher's name as to_yaml writes it: single, grid, tpe, nsga2,
/// random (any scheduler but asha) or asha.
std::string searcher_name(const experiment& exp);

/// Reads and parses the experiment file at `path`. A missing file is
/// not_found, an unreadable one io_error; everything else as in
/// `parse_experiment` with the path as the source name; relative `plugins`
/// become paths relative to the file's directory, and a relative
/// `checkpoint_storage.host_path` becomes absolute, resolved against the
/// file's directory (as the plugins; never the directory of a later
/// command that reads the store, such as `dtrain experiments delete`).
result<experiment> load_experiment(const std::string& path);

/// Parses `yaml_text`. Every error is invalid_argument and its message
/// starts with `source_name`, then names the key path at fault:
/// "exp.yaml: optimizations.aggregation_frequncy: unknown key (known: ...)",
/// "exp.yaml: resources.slots_per_trial: expected an integer, got 'two'",
/// or, for YAML syntax, the 1-based line and column: "exp.yaml:3:7: ...".
/// Never throws: yaml-cpp's exceptions stop here.
result<experiment> parse_experiment(const std::string& yaml_text,
                                    const std::string& source_name);

/// The experiment as YAML in dtrain's own spellings, every field written
/// out; `parse_experiment` reads it back to an equal experiment (a list
/// hyperparameter is written as a list and comes back joined again).
std::string to_yaml(const experiment& exp);

} // namespace dtrain::experiments

namespace dtrain::experiments {

/// 16 hex digits of a stable 64-bit hash (FNV-1a) of an experiment's
/// canonical YAML (to_yaml): equal experiments, equal hashes, on every
/// machine and run. The store keeps it to tell a resumed experiment whose
/// file changed.
std::string config_hash(const std::string& canonical_yaml);

/// Where two experiments differ, as "key.path: before -> after" in key
/// order ("optimizer.lr: 0.001 -> 0.5", "searcher.max_trials: (none) -> 8"),
/// comparing the two canonical YAML texts key by key (lists by index).
/// Empty when they are the same; a text that does not parse is one entry
/// saying so.
std::vector<std::string> config_differences(const std::string& before_yaml,
                                            const std::string& after_yaml);

} // namespace dtrain::experiments
