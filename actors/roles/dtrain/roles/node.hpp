#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "dtrain/roles/listen.hpp"

namespace dtrain::roles {

/// What a node process is given (`dtrain start --address`). A node needs
/// only the cluster side (dtrain/cluster): nothing here or in node.cpp
/// includes the driver side or the dashboard.
struct node_options : listen_options {
  std::string address;        // the head's HOST:PORT (required)
  int slots = 2;              // CPU slots offered
  int cpus = 0;               // cores its replicas may use together; 0: the host's
  int gpus = 0;               // GPUs offered
  std::vector<std::string> plugins;  // plugin libraries loaded at start
  /// The file its output goes to, served to `dtrain logs` (a detached
  /// process's log, or a foreground node's copy of its output: output_tee);
  /// empty: none.
  std::string log_file;
  /// How long (seconds) a node that lost the head tries to join it again,
  /// its replicas running on meanwhile (`--reconnect-window`); negative:
  /// $DTRAIN_RECONNECT_WINDOW_S, else default_reconnect_window; 0: it
  /// stops at once.
  int reconnect_window = -1;
};

/// Ray's reconnect window: how long a node waits for a lost head.
constexpr int default_reconnect_window = 60;

/// o.reconnect_window, or what stands for it (node_options).
std::chrono::seconds reconnect_window(const node_options& o);

/// Runs a node in this process: loads o.plugins, listens, joins the head
/// at o.address (within 10 s) and hosts the replicas the head places on
/// it until SIGINT/SIGTERM (install_signal_handlers first). A node that
/// loses the head (a partition, a head killed) keeps its replicas running
/// and tries to join again (rejoin, reporting the replicas it hosts), with
/// backoff from 250 ms doubling to 5 s, for reconnect_window(o); when that
/// ends first it says so and stops. Stopping, it stops its replicas
/// (waiting up to 3 s for their workers). It records itself in the pid-file registry (processes.hpp)
/// and writes o.port_file once it has joined. Returns the process exit
/// code: 0 after a stop, 2 for options that cannot work (said on stderr,
/// naming the option), 1 when it cannot listen or join.
int run_node(const node_options& o);

} // namespace dtrain::roles
