#pragma once

#include <functional>
#include <string>

#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// Where the answer of resolve_cluster_address came from.
enum class address_source {
  flag,         // the caller's own (a command's --address, a program's argument)
  environment,  // $DTRAIN_ADDRESS
  local_head,   // the head started on this host (its pid file)
  none,         // no cluster named: the caller's fallback applies
};

/// A cluster to attach to: its head's HOST:PORT ("" when source is none).
struct cluster_address {
  std::string address;
  address_source source = address_source::none;
};

/// This host's own head, as the pid-file registry knows it
/// (roles::local_head_address): its HOST:PORT, "" when none runs, or an
/// error naming the record at fault.
using local_head_lookup = std::function<result<std::string>()>;

/// The one answer to "which cluster?", for every command and program that
/// attaches to one. In this order of precedence, the first that names a
/// cluster wins and the later ones are not consulted:
///   1. `flag`, when not empty;
///   2. $DTRAIN_ADDRESS, when set and not empty (`dtrain launch` sets it
///      for the programs it runs);
///   3. `local_head()`, when given: the head started on this host. The
///      command line passes the pid-file registry's lookup; a driver
///      program's cluster::connect passes none, so that without an
///      address it runs an embedded cluster whatever runs on the host;
///   4. none: an empty address; the caller decides what that means (an
///      embedded cluster for train/tune/predict and cluster::connect, the
///      local store file for experiments/report, an error for status/logs:
///      require_cluster_address).
/// Errors: only the lookup's (an unreadable or stale record, two heads),
/// returned as they are.
result<cluster_address> resolve_cluster_address(const std::string& flag,
                                                const local_head_lookup& local_head = {});

/// resolve_cluster_address, where no cluster is an error: not_found saying
/// that none runs on this host and what to give instead.
result<cluster_address> require_cluster_address(const std::string& flag,
                                                const local_head_lookup& local_head);

} // namespace dtrain::actors
