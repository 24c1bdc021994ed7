#include "dtrain/roles/launch.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "dtrain/build_config.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/launch/environment.hpp"
#include "dtrain/launch/head_address.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::roles {

namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// A child process of this task, stopped (SIGTERM, then SIGKILL) by its
/// pid when the object goes, unless it has exited.
class child {
public:
  /// fork + execvp of argv, with `env` added to the environment.
  static result<std::unique_ptr<child>> spawn(const std::vector<std::string>& argv,
                                              const std::map<std::string, std::string>& env = {}) {
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
      return resource_exhausted("fork failed starting " + argv.front());
    if (pid == 0) {
      // A task killed outright takes its head, node and driver with it
      // (the launcher kills tasks with SIGKILL too).
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent)
        _exit(1);  // the parent died before prctl
      for (const auto& [k, v] : env)
        setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      std::fprintf(stderr, "dtrain launch: cannot run %s\n", argv.front().c_str());
      _exit(127);
    }
    return std::unique_ptr<child>(new child(pid, argv.front()));
  }
  ~child() { stop(milliseconds(5000)); }

  /// Whether it still runs (reaps it once it has exited).
  bool running() {
    if (status_)
      return false;
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_)
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    else if (r < 0)
      status_ = 1;  // reaped elsewhere, or SIGCHLD ignored: gone all the same
    return !status_;
  }
  /// The exit status once it has exited (128 + signal when killed).
  std::optional<int> exit_status() {
    running();
    return status_;
  }
  /// Blocks until it exits; its status.
  int wait() {
    while (running())
      std::this_thread::sleep_for(milliseconds(100));
    return *status_;
  }
  /// SIGTERM without waiting (stop() then waits): several children are
  /// asked at once, so their grace periods overlap.
  void ask_to_stop() {
    if (running())
      kill(pid_, SIGTERM);
  }
  void stop(milliseconds grace) {
    if (!running())
      return;
    kill(pid_, SIGTERM);
    const auto deadline = clock_type::now() + grace;
    while (running() && clock_type::now() < deadline)
      std::this_thread::sleep_for(milliseconds(50));
    if (running()) {
      kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  const std::string& what() const { return what_; }

private:
  child(pid_t pid, std::string what) : pid_(pid), what_(std::move(what)) {}
  pid_t pid_;
  std::string what_;
  std::optional<int> status_;
};

bool port_open(const std::string& ip, int port) {
  return net::probe_tcp(ip, static_cast<uint16_t>(port), milliseconds(1000)).is_ok();
}

/// Waits until the head accepts connections; an error naming it (and, on
/// rank 0, the head process's exit) otherwise.
status wait_for_head(const std::string& ip, int port, const launch::launch_env& env,
                     child* head, int timeout_s) {
  const auto deadline = clock_type::now() + std::chrono::seconds(timeout_s);
  while (!port_open(ip, port)) {
    if (head != nullptr && !head->running())
      return unavailable("the head exited with status " + std::to_string(*head->exit_status()) +
                         " before it listened on " + ip + ":" + std::to_string(port));
    if (stop_requested())
      return unavailable("stopped by a signal while waiting for the head");
    if (clock_type::now() > deadline)
      return unavailable("the head at " + ip + ":" + std::to_string(port) + " (rank 0's, on " +
                         env.head_host + ") did not listen within " + std::to_string(timeout_s) +
                         " s");
    std::this_thread::sleep_for(milliseconds(200));
  }
  return status::ok();
}

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

/// The nodes the head has, by short host name; or the error of asking.
result<std::map<std::string, int>> nodes_by_host(actors::cluster& c) {
  caf::scoped_actor self{c.system()};
  result<std::map<std::string, int>> out = unavailable("the head did not answer");
  self->request(c.head(), std::chrono::seconds(10), actors::status_atom::value, c.session())
      .receive(
          [&](actors::cluster_status& st) {
            std::map<std::string, int> hosts;
            for (const auto& n : st.nodes)
              ++hosts[short_name(n.host)];
            out = hosts;
          },
          [&](caf::error& e) { out = unavailable("asking the head: " + caf::to_string(e)); });
  return out;
}

int count(const std::map<std::string, int>& hosts) {
  int n = 0;
  for (const auto& [h, k] : hosts)
    n += k;
  return n;
}

/// Who has not joined: per host of the Slurm nodelist, the tasks missing;
/// under torchrun (which names no hosts) how many.
std::string missing(const launch::launch_env& env, const std::map<std::string, int>& joined) {
  if (env.hosts.empty())
    return std::to_string(env.world_size - count(joined)) + " of " +
           std::to_string(env.world_size) + " tasks (torchrun names no hosts but the head's)";
  std::map<std::string, int> expected;
  for (size_t i = 0; i < env.hosts.size(); ++i)
    expected[short_name(env.hosts[i])] += i < env.tasks_per_node.size()
                                  ? env.tasks_per_node[i]
                                  : env.world_size / static_cast<int>(env.hosts.size());
  std::string out;
  for (const auto& [host, want] : expected) {
    auto it = joined.find(host);
    int have = it == joined.end() ? 0 : it->second;
    if (have < want)
      out += (out.empty() ? "" : ", ") + host + " (" + std::to_string(want - have) + " of " +
             std::to_string(want) + " tasks)";
  }
  return out.empty() ? std::to_string(env.world_size - count(joined)) + " tasks" : out;
}

/// This task's GPUs (CUDA_VISIBLE_DEVICES entries), a slice of its node's
/// by local rank: SLURM_GPUS_ON_NODE / tasks on the node each. Empty
/// without GPUs, or in a build without CUDA (the task then trains on the
/// CPU, and says so). Fewer GPUs than tasks is an error.
result<std::vector<std::string>> gpu_share(const launch::launch_env& env) {
  if (env.gpus_on_node <= 0)
    return std::vector<std::string>{};
#if !DTRAIN_HAS_CUDA
  if (env.local_rank == 0)
    std::fprintf(stderr, "dtrain launch: this dtrain has no CUDA: the node's %d GPUs go unused\n",
                 env.gpus_on_node);
  return std::vector<std::string>{};
#else
  const int share = env.gpus_on_node / std::max(1, env.local_world_size);
  if (share < 1)
    return invalid_argument("SLURM_GPUS_ON_NODE=" + std::to_string(env.gpus_on_node) +
                            " GPUs for " + std::to_string(env.local_world_size) +
                            " tasks on the node: fewer GPUs than tasks");
  std::vector<std::string> all;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string v = visible;
    for (size_t start = 0; start <= v.size();) {
      size_t comma = v.find(',', start);
      all.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
  } else {
    for (int g = 0; g < env.gpus_on_node; ++g)
      all.push_back(std::to_string(g));
  }
  std::vector<std::string> mine;
  for (int g = env.local_rank * share; g < (env.local_rank + 1) * share; ++g)
    if (static_cast<size_t>(g) < all.size())
      mine.push_back(all[static_cast<size_t>(g)]);
  return mine;
#endif
}

int fail(const std::string& what) {
  std::fprintf(stderr, "dtrain launch: error: %s\n", what.c_str());
  return 1;
}

bool is_experiment(const std::string& path) {
  auto ends = [&](const char* s) {
    std::string e(s);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

// Where this task's head is, from its launcher's environment.
struct launch_plan {
  launch::launch_env env;
  std::string ip;       // the head's address as every task reaches it
  std::string address;  // ip:port
};

result<launch_plan> plan_launch(const launch_options& o) {
  if (o.command.empty())
    return invalid_argument("nothing to run: give EXPERIMENT.yaml or PROGRAM [ARGS...]");
  if (is_experiment(o.command.front()) && o.command.size() > 1)
    return invalid_argument("an experiment file takes no arguments (" + o.command[1] +
                            "): put settings in the file, or run a program");
  launch_plan p;
  DTRAIN_ASSIGN_OR_RETURN(p.env, launch::read_launch_env(launch::process_env()));
  // Where the head is (every task connects there) is not where a task's
  // processes listen: a node binds the interface towards the head unless
  // --bind says otherwise. DTRAIN_HEAD_ADDR overrides the head host's
  // address when its name resolves wrongly or not at all. A name that
  // resolves to loopback (Debian's 127.0.1.1) is replaced by an address
  // the job's tasks reach, or refused (launch/head_address.hpp).
  const char* head_override = std::getenv("DTRAIN_HEAD_ADDR");
  auto resolved = net::resolve_ipv4(head_override != nullptr ? head_override : p.env.head_host);
  if (!resolved)
    return status(resolved.error().code(), "the head's host: " + resolved.error().message() +
                                               " (set DTRAIN_HEAD_ADDR to its address)");
  launch::host_network here;
  const auto port = static_cast<uint16_t>(p.env.head_port);
  here.address_towards = [port](const std::string& peer) {
    return net::local_address_towards(peer, port);
  };
  here.any_interface = [] { return net::resolve_bind_address("auto"); };
  DTRAIN_ASSIGN_OR_RETURN(p.ip, launch::choose_head_address(p.env, *resolved,
                                                            head_override != nullptr, here));
  p.address = p.ip + ":" + std::to_string(p.env.head_port);
  return p;
}

void say_plan(const launch_plan& p) {
  const auto& env = p.env;
  if (env.restarts > 0)
    std::fprintf(stderr, "dtrain launch: warning: restart %d of this job (%s): the experiment "
                         "starts again; resume it by id with `dtrain train --resume`\n",
                 env.restarts, env.launcher.c_str());
  if (env.rank != 0)
    return;
  std::printf("dtrain launch: %s, %d tasks on %d nodes; head at %s\n", env.launcher.c_str(),
              env.world_size, env.nodes, p.address.c_str());
  for (const auto& s : env.sources)
    std::printf("  %s\n", s.c_str());
  std::fflush(stdout);
}

std::string this_program() {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  return len > 0 ? std::string(exe, static_cast<size_t>(len)) : "dtrain";
}

// This task's node of one slot, with its share of the node's GPUs.
result<std::unique_ptr<child>> start_node(const launch_options& o, const launch_plan& p,
                                          const std::string& dtrain) {
  // No reconnect window: a task's node ends when the head does (the end of
  // the job, follow_node), not a minute later.
  std::vector<std::string> args{dtrain, "start", "--address", p.address, "--slots", "1",
                                "--reconnect-window", "0"};
  if (!o.bind.empty())
    args.insert(args.end(), {"--bind", o.bind});
  std::map<std::string, std::string> env;
  DTRAIN_ASSIGN_OR_RETURN(auto gpus, gpu_share(p.env));
  if (!gpus.empty()) {
    args.insert(args.end(), {"--gpus", std::to_string(gpus.size())});
    std::string visible;
    for (const auto& g : gpus)
      visible += (visible.empty() ? "" : ",") + g;
    env["CUDA_VISIBLE_DEVICES"] = visible;
  }
  return child::spawn(args, env);
}

// Every rank but 0: its node ends when the head goes, when the driver has
// ended.
int follow_node(child& node, int rank) {
  while (node.running() && !stop_requested())
    std::this_thread::sleep_for(milliseconds(200));
  if (stop_requested())
    return 1;
  int rc = *node.exit_status();
  return rc == 0 ? 0 : fail("rank " + std::to_string(rank) + ": its node exited with " +
                            std::to_string(rc));
}

// Rank 0: until every task's node has joined the head.
status wait_for_tasks(actors::cluster& c, const launch_plan& p, child& head, child& node,
                      int timeout_s) {
  const auto deadline = clock_type::now() + std::chrono::seconds(timeout_s);
  std::map<std::string, int> joined;
  for (;;) {
    if (auto hosts = nodes_by_host(c))
      joined = *hosts;
    if (count(joined) >= p.env.world_size)
      return status::ok();
    if (!node.running() || !head.running())
      return unavailable("rank 0: its " + std::string(head.running() ? "node" : "head") +
                         " exited while the tasks were joining");
    if (stop_requested())
      return status(error_code::aborted, "");
    if (clock_type::now() > deadline)
      return unavailable("only " + std::to_string(count(joined)) + " of " +
                         std::to_string(p.env.world_size) + " tasks joined the head within " +
                         std::to_string(timeout_s) + " s; missing: " + missing(p.env, joined));
    std::this_thread::sleep_for(milliseconds(300));
  }
}

// "" while every task's node is in the cluster; otherwise what left.
std::string node_left(actors::cluster& c, const launch_plan& p) {
  auto hosts = nodes_by_host(c);
  if (!hosts || count(*hosts) >= p.env.world_size)
    return "";
  return "a task's node left the cluster (" + std::to_string(count(*hosts)) + " of " +
         std::to_string(p.env.world_size) + " remain)";
}

// Rank 0: the driver, watched until it exits; why the job failed ("" when
// the driver ended on its own, for reasons of its own) and its exit status.
std::pair<std::string, int> drive(const launch_options& o, const launch_plan& p,
                                  actors::cluster& c, child& head, child& node,
                                  const std::string& dtrain) {
  std::vector<std::string> args = o.command;
  if (is_experiment(o.command.front()))
    args = {dtrain, "train", o.command.front(), "--address", p.address};
  auto driver = child::spawn(args, {{"DTRAIN_ADDRESS", p.address}});
  if (!driver)
    return {driver.error().message(), 1};
  std::string lost;
  while ((*driver)->running() && lost.empty()) {
    if (stop_requested())
      lost = "stopped by a signal";
    else if (!head.running() || !node.running())
      lost = std::string("rank 0's ") + (head.running() ? "node" : "head") + " exited";
    else if (lost = node_left(c, p); lost.empty())
      std::this_thread::sleep_for(milliseconds(500));
  }
  // A driver that failed on its own may have failed because a task's node
  // left between two polls (its trainer learns of a lost replica before
  // this loop does): name that cause rather than a bare exit code.
  if (!lost.empty())
    lost += "; the driver was stopped";
  else if (int rc = *(*driver)->exit_status(); rc != 0 && !(lost = node_left(c, p)).empty())
    lost += "; the driver exited with " + std::to_string(rc);
  (*driver)->stop(milliseconds(10000));
  return {lost, *(*driver)->exit_status()};
}

// Rank 0 once its head listens and its node runs: the tasks join, the
// driver runs, then everything stops.
int lead(const launch_options& o, const launch_plan& p, child& head, child& node,
         const std::string& dtrain) {
  auto c = actors::cluster::connect({p.address, 0, -1, std::chrono::seconds(o.join_timeout_s)});
  if (!c)
    return fail(c.error().message());
  if (status s = wait_for_tasks(**c, p, head, node, o.join_timeout_s); !s)
    return s.code() == error_code::aborted ? 1 : fail(s.message());
  std::printf("dtrain launch: all %d tasks joined; running %s\n", p.env.world_size,
              o.command.front().c_str());
  std::fflush(stdout);
  auto [lost, rc] = drive(o, p, **c, head, node, dtrain);
  c->reset();
  node.ask_to_stop();
  head.ask_to_stop();
  node.stop(milliseconds(5000));
  head.stop(milliseconds(5000));
  if (!lost.empty())
    return fail(lost);
  std::printf("dtrain launch: the driver exited with %d\n", rc);
  return rc;
}

} // namespace

int run_launch(const launch_options& o) {
  auto plan = plan_launch(o);
  if (!plan)
    return fail(plan.error().message());
  say_plan(*plan);
  install_signal_handlers();
  const std::string dtrain = o.dtrain_program.empty() ? this_program() : o.dtrain_program;
  const int rank = plan->env.rank;
  std::unique_ptr<child> head;
  if (rank == 0) {
    auto h = child::spawn({dtrain, "start", "--head", "--bind", o.bind.empty() ? plan->ip : o.bind,
                           "--port", std::to_string(plan->env.head_port)});
    if (!h)
      return fail(h.error().message());
    head = std::move(*h);
  }
  if (auto s = wait_for_head(plan->ip, plan->env.head_port, plan->env, head.get(),
                             o.join_timeout_s);
      !s)
    return fail("rank " + std::to_string(rank) + ": " + s.message());
  auto node = start_node(o, *plan, dtrain);
  if (!node)
    return fail(node.error().message());
  return rank == 0 ? lead(o, *plan, *head, **node, dtrain) : follow_node(**node, rank);
}

} // namespace dtrain::roles
