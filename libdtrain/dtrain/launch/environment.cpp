#include "dtrain/launch/environment.hpp"

#include <cstdlib>
#include <numeric>

#include "dtrain/core/check.hpp"
#include "dtrain/launch/nodelist.hpp"

namespace dtrain::launch {

namespace {

/// Reads variables for one launcher, recording where each value came from.
class reader {
public:
  reader(const env_lookup& env, launch_env& out) : env_(env), out_(out) {}

  /// The first of `names` that is set, or nullopt; *which gets its name.
  std::optional<std::string> first(const std::vector<std::string>& names,
                                   std::string* which = nullptr) const {
    for (const auto& n : names)
      if (auto v = env_(n); v && !v->empty()) {
        if (which)
          *which = n;
        return v;
      }
    return std::nullopt;
  }

  /// A non-negative integer from the first set variable of `names`;
  /// `fallback` when none is set and a fallback is given.
  result<int> integer(const char* what, const std::vector<std::string>& names,
                      std::optional<int> fallback = std::nullopt) {
    std::string which;
    auto v = first(names, &which);
    if (!v) {
      if (fallback) {
        note(what, std::to_string(*fallback), "default");
        return *fallback;
      }
      return invalid_argument(std::string(what) + ": none of " + joined(names) + " is set");
    }
    char* end = nullptr;
    long n = std::strtol(v->c_str(), &end, 10);
    if (end == v->c_str() || *end != '\0' || n < 0 || n > 1 << 24)
      return invalid_argument(which + "='" + *v + "' is not a non-negative integer (" + what + ")");
    note(what, std::to_string(n), which);
    return static_cast<int>(n);
  }

  void note(const std::string& what, const std::string& value, const std::string& source) {
    out_.sources.push_back(what + " " + value + " (" + source + ")");
  }

  static std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names)
      s += (s.empty() ? "" : ", ") + n;
    return s;
  }

private:
  const env_lookup& env_;
  launch_env& out_;
};

status check_below(const char* a, int value, const char* b, int bound) {
  if (value >= bound)
    return invalid_argument(std::string(a) + " " + std::to_string(value) + " is not below " + b +
                            " " + std::to_string(bound));
  return status::ok();
}

status read_port(reader& r, launch_env& out, std::optional<int> derived, const char* rule) {
  if (r.first({"DTRAIN_PORT"})) {
    DTRAIN_ASSIGN_OR_RETURN(out.head_port, r.integer("head port", {"DTRAIN_PORT"}));
  } else if (derived) {
    out.head_port = *derived;
    r.note("head port", std::to_string(*derived), rule);
  }
  if (out.head_port < 1 || out.head_port > 65535)
    return invalid_argument("head port " + std::to_string(out.head_port) +
                            " is outside 1-65535 (set DTRAIN_PORT)");
  return status::ok();
}

result<launch_env> read_torchrun(const env_lookup& env) {
  launch_env out;
  out.launcher = "torchrun";
  reader r(env, out);
  DTRAIN_ASSIGN_OR_RETURN(out.rank, r.integer("rank", {"RANK"}));
  DTRAIN_ASSIGN_OR_RETURN(out.world_size, r.integer("world size", {"WORLD_SIZE"}));
  DTRAIN_ASSIGN_OR_RETURN(out.local_rank, r.integer("local rank", {"LOCAL_RANK"}));
  DTRAIN_ASSIGN_OR_RETURN(out.local_world_size,
                          r.integer("local world size", {"LOCAL_WORLD_SIZE"}));
  DTRAIN_ASSIGN_OR_RETURN(out.node_rank, r.integer("node rank", {"GROUP_RANK"}));
  if (out.local_world_size == 0 || out.world_size % out.local_world_size != 0)
    return invalid_argument("WORLD_SIZE " + std::to_string(out.world_size) +
                            " is not a multiple of LOCAL_WORLD_SIZE " +
                            std::to_string(out.local_world_size));
  DTRAIN_ASSIGN_OR_RETURN(out.nodes, r.integer("nodes", {"GROUP_WORLD_SIZE"},
                                               out.world_size / out.local_world_size));
  auto addr = r.first({"MASTER_ADDR"});
  if (!addr)
    return invalid_argument("head host: MASTER_ADDR is not set");
  out.head_host = *addr;
  r.note("head host", *addr, "MASTER_ADDR");
  DTRAIN_ASSIGN_OR_RETURN(int master_port, r.integer("torchrun's store port", {"MASTER_PORT"}));
  DTRAIN_RETURN_IF_ERROR(read_port(r, out, master_port + 1, "MASTER_PORT + 1"));
  out.job_id = r.first({"TORCHELASTIC_RUN_ID"}).value_or("");
  DTRAIN_ASSIGN_OR_RETURN(out.restarts, r.integer("restarts", {"TORCHELASTIC_RESTART_COUNT"}, 0));
  return out;
}

result<launch_env> read_slurm(const env_lookup& env) {
  launch_env out;
  out.launcher = "slurm";
  reader r(env, out);
  DTRAIN_ASSIGN_OR_RETURN(out.rank, r.integer("rank", {"SLURM_PROCID"}));
  DTRAIN_ASSIGN_OR_RETURN(out.world_size, r.integer("world size", {"SLURM_STEP_NUM_TASKS",
                                                                   "SLURM_NTASKS",
                                                                   "SLURM_NPROCS"}));
  std::string list_var;
  auto list = r.first({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, &list_var);
  if (!list)
    return invalid_argument("hosts: none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, "
                            "SLURM_NODELIST is set");
  auto hosts = expand_nodelist(*list);
  if (!hosts)
    return invalid_argument(list_var + ": " + hosts.error().message());
  out.hosts = std::move(*hosts);
  r.note("hosts", *list, list_var);
  DTRAIN_ASSIGN_OR_RETURN(out.nodes, r.integer("nodes", {"SLURM_STEP_NUM_NODES",
                                                         "SLURM_JOB_NUM_NODES", "SLURM_NNODES"},
                                               static_cast<int>(out.hosts.size())));
  if (static_cast<size_t>(out.nodes) != out.hosts.size())
    return invalid_argument(list_var + " names " + std::to_string(out.hosts.size()) +
                            " hosts but the step has " + std::to_string(out.nodes) + " nodes");
  DTRAIN_ASSIGN_OR_RETURN(out.node_rank, r.integer("node rank", {"SLURM_NODEID"}));
  DTRAIN_ASSIGN_OR_RETURN(out.local_rank, r.integer("local rank", {"SLURM_LOCALID"}));
  std::string tasks_var;
  if (auto tasks = r.first({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, &tasks_var)) {
    auto counts = expand_tasks_per_node(*tasks);
    if (!counts)
      return invalid_argument(tasks_var + ": " + counts.error().message());
    if (counts->size() != out.hosts.size() ||
        std::accumulate(counts->begin(), counts->end(), 0) != out.world_size)
      return invalid_argument(tasks_var + "='" + *tasks + "' does not give " +
                              std::to_string(out.world_size) + " tasks on " +
                              std::to_string(out.hosts.size()) + " nodes");
    DTRAIN_RETURN_IF_ERROR(check_below("node rank", out.node_rank, "nodes", out.nodes));
    out.local_world_size = (*counts)[static_cast<size_t>(out.node_rank)];
    out.tasks_per_node = *counts;
    r.note("local world size", std::to_string(out.local_world_size), tasks_var);
  } else {
    out.local_world_size = out.world_size / out.nodes;
    r.note("local world size", std::to_string(out.local_world_size), "tasks / nodes");
  }
  DTRAIN_ASSIGN_OR_RETURN(out.gpus_on_node, r.integer("GPUs on node", {"SLURM_GPUS_ON_NODE"}, -1));
  out.head_host = out.hosts.front();
  r.note("head host", out.head_host, "the first of " + list_var);
  out.job_id = r.first({"SLURM_JOB_ID", "SLURM_JOBID"}).value_or("");
  DTRAIN_ASSIGN_OR_RETURN(out.restarts, r.integer("restarts", {"SLURM_RESTART_COUNT"}, 0));
  std::optional<int> derived;
  if (!out.job_id.empty()) {
    std::string digits = out.job_id.substr(out.job_id.size() > 4 ? out.job_id.size() - 4 : 0);
    char* end = nullptr;
    long tail = std::strtol(digits.c_str(), &end, 10);
    long step = 0;
    if (auto s = r.first({"SLURM_STEP_ID", "SLURM_STEPID"}))
      step = std::strtol(s->c_str(), nullptr, 10);
    if (end != digits.c_str() && *end == '\0')
      derived = 15000 + static_cast<int>((tail + 101 * std::max(0L, step)) % 10000);
  }
  if (!derived && !r.first({"DTRAIN_PORT"}))
    return invalid_argument("head port: neither DTRAIN_PORT nor a numeric SLURM_JOB_ID is set");
  DTRAIN_RETURN_IF_ERROR(read_port(r, out, derived, "15000 + (SLURM_JOB_ID + 101 x SLURM_STEP_ID) mod 10000"));
  return out;
}

} // namespace

env_lookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

result<launch_env> read_launch_env(const env_lookup& env) {
  result<launch_env> out = not_found(
      "no launcher: neither torchrun's variables (TORCHELASTIC_RUN_ID, GROUP_RANK) nor Slurm's "
      "(SLURM_PROCID: run under srun) are set");
  if (env("TORCHELASTIC_RUN_ID") || env("GROUP_RANK"))
    out = read_torchrun(env);
  else if (env("SLURM_PROCID"))
    out = read_slurm(env);
  if (!out)
    return out;
  DTRAIN_RETURN_IF_ERROR(check_below("rank", out->rank, "world size", out->world_size));
  DTRAIN_RETURN_IF_ERROR(
      check_below("local rank", out->local_rank, "local world size", out->local_world_size));
  DTRAIN_RETURN_IF_ERROR(check_below("node rank", out->node_rank, "nodes", out->nodes));
  return out;
}

} // namespace dtrain::launch
