#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::launch {

/// Where one task of a launched job stands, read from the environment its
/// launcher set: Slurm's srun (step-level variables first, then the job's)
/// or torchrun. `dtrain launch` forms the cluster from it: the task of rank
/// 0 starts the head on head_host:head_port, every task a node joining it.
struct launch_env {
  std::string launcher;               // "slurm" or "torchrun"
  int rank = 0, world_size = 1;       // this task among all of the job's
  int local_rank = 0, local_world_size = 1;  // among this node's tasks
  int node_rank = 0, nodes = 1;
  /// Slurm: the step's hosts, in order (the first is the head's); torchrun:
  /// empty (it names only the rank-0 host).
  std::vector<std::string> hosts;
  /// Slurm: the tasks on each of `hosts` (SLURM_STEP_TASKS_PER_NODE), or
  /// empty when not given.
  std::vector<int> tasks_per_node;
  std::string head_host;
  /// DTRAIN_PORT when set; under torchrun MASTER_PORT + 1 (torchrun's own
  /// store listens on MASTER_PORT); under Slurm 15000 + (job id + 101 x
  /// step id) mod 10000 (after PyTorch Lightning's 15000 + the job id's
  /// last four digits; the step id parts concurrent steps of one job).
  int head_port = 0;
  int gpus_on_node = -1;              // SLURM_GPUS_ON_NODE; -1: not given
  /// TORCHELASTIC_RESTART_COUNT or SLURM_RESTART_COUNT (a requeue); 0 first.
  int restarts = 0;
  std::string job_id;                 // SLURM_JOB_ID, TORCHELASTIC_RUN_ID
  /// "rank 3 (SLURM_PROCID)": each value and the variable it came from,
  /// for the table `dtrain launch` prints when it starts.
  std::vector<std::string> sources;
};

/// An environment to read: a variable's value, or nullopt when unset.
using env_lookup = std::function<std::optional<std::string>(const std::string& name)>;
/// This process's environment.
env_lookup process_env();

/// The launcher's settings: torchrun's when TORCHELASTIC_RUN_ID or
/// GROUP_RANK is set, else Slurm's when SLURM_PROCID is set, else
/// not_found saying that neither launcher's variables are there. Every
/// other error (invalid_argument) names the variable that is missing or
/// malformed and its value, or the two that disagree (a rank not below
/// the world size, a nodelist whose length is not the node count, task
/// counts per node that do not add up to the tasks).
result<launch_env> read_launch_env(const env_lookup& env);

} // namespace dtrain::launch
