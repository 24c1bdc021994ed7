#pragma once

#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

/// Slurm's compact host and task lists, as srun and sbatch set them in a
/// task's environment (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE).
namespace dtrain::launch {

/// The host names of a Slurm host list, in Slurm's order (what `scontrol
/// show hostnames LIST` prints): entries separated by commas or blanks,
/// each a name with any number of bracket groups of numbers and ranges,
/// expanded as a product ("a[1-2]b[3-4]" is a1b3 a1b4 a2b3 a2b4; with more
/// groups the last changes fastest, then the first, the second, ..., as
/// Slurm orders them), with zero padding kept ("n[08-10]" is n08 n09 n10).
/// Errors
/// (invalid_argument) quote the list and name what is wrong: an unclosed
/// or stray bracket, a range that runs backwards, something other than
/// digits in a range, text after the last bracket group ("n[1-2]-ib":
/// Slurm 22.05 refuses it too), an empty list, or more than `max_hosts`
/// names (refused before they are made: memory and time stay bounded by
/// `max_hosts` and the list's length).
result<std::vector<std::string>> expand_nodelist(const std::string& list,
                                                 size_t max_hosts = 1 << 16);

/// The task counts per node of SLURM_TASKS_PER_NODE's form ("2(x3),1" is 2,
/// 2, 2, 1), in the nodelist's order. Errors name the malformed item, or
/// say that the list counts more than `max_nodes` nodes (refused before
/// they are made).
result<std::vector<int>> expand_tasks_per_node(const std::string& list,
                                               size_t max_nodes = 1 << 16);

} // namespace dtrain::launch
