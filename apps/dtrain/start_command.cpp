// `dtrain start --head | --address HOST:PORT`: a head or a node on this
// host (dtrain/roles/start.hpp).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "command_line.hpp"
#include "dtrain/roles/start.hpp"

namespace dtrain::cli {

namespace {

// Both roles' flags in one place: CLI11 fills them before it is known
// which role was asked for.
struct start_flags {
  bool head = false, detach = false;
  roles::head_options head_role;  // its listen_options are shared with the node's
  roles::node_options node_role;
};

int run_start(start_flags& f) {
  if (f.head == !f.node_role.address.empty()) {
    std::fprintf(stderr, "error: dtrain start needs exactly one of --head or --address\n");
    return 2;
  }
  if (!f.head && f.head_role.dashboard.port >= 0) {
    std::fprintf(stderr, "error: --dashboard-port is for the head (nodes serve no dashboard)\n");
    return 2;
  }
  if (f.head && !f.node_role.plugins.empty()) {
    std::fprintf(stderr, "error: --plugin is for nodes (they host the replicas), not the head\n");
    return 2;
  }
  static_cast<roles::listen_options&>(f.head_role) = f.node_role;
  return f.head ? roles::start_head(f.head_role, f.detach)
                : roles::start_node(f.node_role, f.detach);
}

} // namespace

void add_start_command(CLI::App& app, command_list& out) {
  auto f = std::make_shared<start_flags>();
  roles::node_options& n = f->node_role;
  auto* start = app.add_subcommand("start", "start a head or a node on this host");
  start->add_flag("--head", f->head, "run the head (node registry, placement)");
  start->add_option("--address", n.address, "join the head at HOST:PORT as a node");
  start->add_option("--port", n.port, "port to listen on (0: any)")->capture_default_str();
  start->add_option("--bind", n.bind,
                    "address to listen on (default: loopback, or for a node the interface "
                    "that routes to the head; 0.0.0.0: all)");
  start->add_option("--advertise", n.advertise,
                    "address peers reach this process at (default: the bind address)");
  start->add_option("--slots", n.slots, "CPU slots this node offers")->capture_default_str();
  start->add_option("--cpus", n.cpus,
                    "cores this node's replicas may use together (default: the host's, shared "
                    "with every replica on the host)");
  start->add_option("--gpus", n.gpus, "GPUs this node offers")->capture_default_str();
  start->add_option("--reconnect-window", n.reconnect_window,
                    "node: seconds it keeps trying to join a head it lost, its replicas "
                    "running on (default: $DTRAIN_RECONNECT_WINDOW_S or 60; 0: stop at once)")
      ->check(CLI::NonNegativeNumber);
  start->add_option("--port-file", n.port_file, "write HOST:PORT here once listening");
  start->add_option("--store", f->head_role.store_path,
                    "head: its experiment store file (default: $DTRAIN_HOME/experiments.db)");
  start->add_option("--plugin", n.plugins,
                    "node: load this plugin library at start (repeatable); drivers that name "
                    "it need not ship it");
  add_dashboard_options(start, f->head_role.dashboard, false);
  start->add_flag("--detach", f->detach, "run in the background (log and pid in $DTRAIN_HOME)");
  add_tls_options(start, n.tls);
  out.push_back({start, [f] { return run_start(*f); }});
}

} // namespace dtrain::cli
