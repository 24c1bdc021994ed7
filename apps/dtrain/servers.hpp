#pragma once

#include <cstdint>
#include <string>

namespace dtrain::cli {

struct server_options {
  std::string address;        // node: the head's HOST:PORT
  std::string bind = "127.0.0.1";
  bool allow_insecure = false;  // bind to a non-loopback address without TLS
  uint16_t port = 0;          // 0: any free port
  int slots = 2;              // node: CPU slots offered
  int gpus = 0;               // node: GPUs offered
  std::string port_file;      // where to write "HOST:PORT" once listening
};

/// Run in the foreground until SIGINT/SIGTERM (a node also until the head
/// goes away); return the process exit code.
int run_head(const server_options& o);
int run_node(const server_options& o);

} // namespace dtrain::cli
