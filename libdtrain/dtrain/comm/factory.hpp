#pragma once

#include <memory>
#include <string>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/comm/shm.hpp"
#include "dtrain/rendezvous/store.hpp"

namespace dtrain::comm {

/// How a rank joins a group.
struct group_options {
  int rank = 0;
  int size = 1;
  /// The rendezvous store, already under the group's prefix (trainer id and
  /// generation): keys of other groups and generations are never seen.
  std::shared_ptr<rendezvous::store> store;
  /// "auto", "shm", "gloo", "hierarchical" or "nccl". auto: nccl for CUDA
  /// buffers; shm when every rank is on this host; otherwise hierarchical
  /// (shm inside each host, gloo between one leader per host).
  std::string backend = "auto";
  /// Where the buffers live: cuda selects NCCL under auto.
  device where = device::cpu();
  /// The host this rank runs on, as ranks compare them; empty =
  /// net::host_identity().
  /// Tests set distinct names to form several "hosts" on one machine.
  std::string host;
  /// The address Gloo binds to and publishes to its peers (gloo, and the
  /// leaders of hierarchical): the node's own address on a multi-host
  /// cluster, loopback unless told otherwise; "" or "auto" picks this host's
  /// first non-loopback IPv4 address (net::resolve_bind_address()). One not of
  /// this machine is an error naming it.
  std::string bind_address = "127.0.0.1";
  milliseconds timeout = milliseconds(30000);
  /// The shared-memory segment of shm groups (and of each host's group
  /// under hierarchical): slot sizes, name prefix.
  shm_options shm;
};

/// Forms the group: ranks exchange their host names through the store,
/// the backend is chosen, and the communicator returns once every rank has
/// joined. Errors name the backend, the rank and what is missing (an
/// unknown backend, a rank that never arrived, CUDA without NCCL, ...).
result<std::unique_ptr<communicator>> make_communicator(const group_options& options);

} // namespace dtrain::comm
