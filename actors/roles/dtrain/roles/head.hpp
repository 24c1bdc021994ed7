#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dashboard_serving.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::cli {

struct server_options {
  std::string address;        // node: the head's HOST:PORT
  /// Where to listen. Empty: 127.0.0.1 for a head; for a node, loopback
  /// when the head is on loopback, else the address of the interface that
  /// routes to the head. "0.0.0.0": every interface.
  std::string bind;
  /// The address peers use to reach this process (nodes register it with
  /// the head; their replicas' communicators bind and publish it). Empty:
  /// the bind address, or for a wildcard bind the interface towards the head.
  std::string advertise;
  /// --tls-cert/--tls-key/--tls-ca; all empty: $DTRAIN_HOME/tls's files
  /// for the role, else plain remoting, which may bind loopback only.
  security::tls_files tls;
  uint16_t port = 0;          // 0: any free port
  int slots = 2;              // node: CPU slots offered
  int cpus = 0;               // node: cores its replicas may use together; 0: the host's
  int gpus = 0;               // node: GPUs offered
  std::string port_file;      // where to write "HOST:PORT" once listening
  std::string store_path;     // head: its experiment store (empty: $DTRAIN_HOME/experiments.db)
  std::vector<std::string> plugins;  // node: plugin libraries loaded at start
  dashboard_flags dashboard;  // head: --dashboard-port/--dashboard-bind/--dashboard-file
  /// node: the file its output goes to, served to `dtrain logs` (the
  /// detached process's log, or the foreground node's copy of its output).
  std::string log_file;
};

/// Run in the foreground until SIGINT/SIGTERM (a node also until the head
/// goes away); return the process exit code.
int run_head(const server_options& o);
int run_node(const server_options& o);

} // namespace dtrain::cli
