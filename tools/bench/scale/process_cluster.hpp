#pragma once

// The scale harness's cluster of real processes: one `dtrain start --head`
// and many `dtrain start --address` nodes, all forked at once (not one
// after the other, as tools/bench/local_nodes.hpp does), so that the time
// for all of them to join is what a cluster's start really costs.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"
#include "local_nodes.hpp"

namespace dtrain::bench::scale {

/// A head and node processes of the `dtrain` binary beside this program,
/// on loopback, in a DTRAIN_HOME of their own under the temporary
/// directory. Every process it starts is SIGKILLed by its pid and reaped,
/// and the directory removed, when this is destroyed (a SIGSTOPped one
/// too: SIGKILL ends a stopped process); with $DTRAIN_SCALE_KEEP set the
/// directory and its logs stay. Not thread-safe.
class process_cluster {
public:
  explicit process_cluster(const std::string& tag) {
    binary_ = dtrain_beside_me();
    home_ = std::filesystem::temp_directory_path() /
            (tag + "-" + std::to_string(getpid()) + "-" + std::to_string(++instances_));
    std::filesystem::create_directories(home_);
    setenv("DTRAIN_HOME", home_.c_str(), 1);
  }
  ~process_cluster() {
    kill_and_reap(all_);
    std::error_code ec;
    if (std::getenv("DTRAIN_SCALE_KEEP") == nullptr)  // kept for a look at the logs
      std::filesystem::remove_all(home_, ec);
  }
  process_cluster(const process_cluster&) = delete;
  process_cluster& operator=(const process_cluster&) = delete;

  /// Starts the head (with its dashboard when `dashboard`) and waits up to
  /// 20 s for its address.
  status start_head(bool dashboard) {
    std::vector<std::string> args{"start", "--head", "--port", "0", "--port-file",
                                  file("head.address")};
    if (dashboard) {
      args.insert(args.end(), {"--dashboard-port", "0", "--dashboard-file", file("dashboard.url")});
    }
    head_pid_ = spawn(args, "head");
    if (head_pid_ < 0)
      return io_error("cannot fork the head");
    address_ = wait_for_word(file("head.address"), std::chrono::seconds(20));
    if (address_.empty())
      return unavailable("the head did not start within 20 s; see " + file("head.log"));
    if (dashboard) {
      const std::string url = wait_for_word(file("dashboard.url"), std::chrono::seconds(5));
      const auto colon = url.rfind(':');
      dashboard_port_ = colon == std::string::npos ? 0 : std::atoi(url.c_str() + colon + 1);
      token_ = wait_for_word(file("dashboard-token"), std::chrono::seconds(5));
    }
    return status::ok();
  }

  /// Forks `n` one-slot nodes joining the head, without waiting for them.
  void start_nodes(int n, int slots = 1) {
    for (int i = 0; i < n; ++i) {
      const std::string name = "node" + std::to_string(nodes_.size());
      const pid_t pid = spawn({"start", "--address", address_, "--slots", std::to_string(slots),
                               "--port", "0"},
                              name);
      if (pid > 0)
        nodes_.push_back(pid);
    }
  }

  const std::string& address() const { return address_; }
  const std::string& binary() const { return binary_; }
  std::string file(const std::string& name) const { return (home_ / name).string(); }
  pid_t head_pid() const { return head_pid_; }
  const std::vector<pid_t>& node_pids() const { return nodes_; }
  int dashboard_port() const { return dashboard_port_; }
  const std::string& dashboard_token() const { return token_; }

private:
  pid_t spawn(std::vector<std::string> args, const std::string& name) {
    const pid_t pid = spawn_logged(binary_, std::move(args), file(name + ".log"));
    if (pid > 0)
      all_.push_back(pid);
    return pid;
  }

  static inline int instances_ = 0;
  std::string binary_;
  std::filesystem::path home_;
  std::string address_;
  std::string token_;
  int dashboard_port_ = 0;
  pid_t head_pid_ = -1;
  std::vector<pid_t> nodes_;
  std::vector<pid_t> all_;
};

/// A process's resident set (VmRSS) in bytes; -1 when it cannot be read.
inline int64_t rss_bytes(pid_t pid) {
  auto bytes = proc_status_bytes(pid, "VmRSS:");
  return bytes ? *bytes : -1;
}

/// How many sockets process `pid` holds open (its connections and
/// listeners); -1 when its descriptors cannot be read.
inline int socket_count(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code link_ec;
    const auto target = std::filesystem::read_symlink(it->path(), link_ec).string();
    n += target.rfind("socket:", 0) == 0;
  }
  return ec ? -1 : n;
}

/// A process's CPU time (user + system) in seconds; -1 when unreadable.
inline double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line))
    return -1;
  // After the command name's closing parenthesis: state is field 3,
  // utime field 14 and stime field 15.
  const auto close = line.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::stod(field);
    if (i == 15)
      stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

} // namespace dtrain::bench::scale
