// `dtrain start`: a role as a process of its own, in the foreground or
// detached into the background.
#include "dtrain/roles/start.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "dtrain/roles/output_tee.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::roles {

namespace {

std::string home_file(const std::string& name, pid_t pid, const char* extension) {
  return cluster_dir() + "/" + name + "-" + std::to_string(pid) + extension;
}

// Forks into the background: the exit code in the starting process (after
// saying where the role listens), nothing in the detached one.
std::optional<int> detach_role(const std::string& role, const std::string& port_file,
                               const std::string& url_file) {
  const std::string log = home_file(role, getpid(), ".log");
  auto child = daemonize(log, port_file);
  if (!child) {
    std::fprintf(stderr, "error: %s\n", child.error().message().c_str());
    return 1;
  }
  if (*child)
    return std::nullopt;
  std::ifstream in(port_file);
  std::string address;
  if (!(in >> address)) {
    std::fprintf(stderr, "error: the %s did not start; see %s\n", role.c_str(), log.c_str());
    return 1;
  }
  std::printf("dtrain %s started at %s (log %s)\n", role.c_str(), address.c_str(), log.c_str());
  // The head writes the dashboard's URL before its address.
  std::ifstream url_in(url_file);
  std::string url;
  if (!url_file.empty() && url_in >> url)
    std::printf("dashboard at %s (token: `dtrain dashboard-token`)\n", url.c_str());
  return 0;
}

} // namespace

int start_head(head_options o, bool detach) {
  if (detach) {
    if (o.port_file.empty())
      o.port_file = home_file("head", getpid(), ".address");
    if (o.dashboard.port >= 0 && o.dashboard.url_file.empty())
      o.dashboard.url_file = home_file("dashboard", getpid(), ".url");
    if (auto parent = detach_role("head", o.port_file, o.dashboard.url_file))
      return *parent;
  }
  install_signal_handlers();
  return run_head(o);
}

int start_node(node_options o, bool detach) {
  const pid_t started_by = getpid();  // names the detached process's log
  if (detach) {
    if (o.port_file.empty())
      o.port_file = home_file("node", getpid(), ".address");
    if (auto parent = detach_role("node", o.port_file, ""))
      return *parent;
  }
  install_signal_handlers();
  // A node's output goes to a log file it serves to `dtrain logs`: the
  // detached process's own, else a copy of what the terminal shows.
  std::unique_ptr<output_tee> tee;
  o.log_file = home_file("node", detach ? started_by : getpid(), ".log");
  if (!detach) {
    std::error_code ec;
    std::filesystem::create_directories(cluster_dir(), ec);
    auto started = output_tee::start(o.log_file);
    if (started) {
      tee = std::move(*started);
    } else {
      std::fprintf(stderr, "dtrain node: %s; `dtrain logs` will find no log of this node\n",
                   started.error().message().c_str());
      o.log_file.clear();
    }
  }
  return run_node(o);
}

} // namespace dtrain::roles
