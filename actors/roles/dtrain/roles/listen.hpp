#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "caf/fwd.hpp"
#include "dtrain/cluster/tls.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::roles {

/// Where a head or node listens and how peers reach it: the options both
/// roles share (head.hpp, node.hpp).
struct listen_options {
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
  std::string port_file;      // where to write "HOST:PORT" once listening (empty: nowhere)
};

/// The address to listen on and the one to advertise, from o.bind,
/// o.advertise and (for a node) the head's host; anything but loopback
/// needs TLS. Errors name the option at fault (--bind, --advertise).
result<std::pair<std::string, std::string>> choose_addresses(const listen_options& o,
                                                             const std::string& head_host,
                                                             const actors::tls_identity& tls);

/// Writes "text\n" to `path` whole or not at all (readers such as `dtrain
/// start --detach` see the line or no file); nothing when path is empty. A
/// failure is said on stderr: the role goes on.
void write_ready_file(const std::string& path, const std::string& text);

/// Blocks until SIGINT/SIGTERM (install_signal_handlers first), or until
/// `watched` goes down when given (then says "`what` is gone" on stderr and
/// returns true; false after a stop).
bool wait_for_stop(caf::actor_system& sys, const caf::actor_addr& watched, const char* what);

} // namespace dtrain::roles
