#pragma once

#include <chrono>
#include <memory>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::dashboard {

/// Where the dashboard reads what it shows: the head's view of the cluster
/// and the experiment store it keeps. One implementation talks to a head
/// actor (head_source); tests may hand in their own.
///
/// Every call blocks the caller, bounded by the source's timeout, and fails
/// (unavailable) when the head (or a node) does not answer in time. Called
/// from the dashboard server's workers, several at once: implementations
/// must be thread-safe.
class cluster_source {
public:
  virtual ~cluster_source() = default;
  /// What `dtrain status` prints: usable nodes, slots, GPUs, trainers.
  virtual result<actors::cluster_status> status() = 0;
  /// The cluster's experiment store (its read calls are what the dashboard
  /// uses); made once, kept while it answers.
  virtual result<std::shared_ptr<experiments::experiment_store>> store() = 0;
  /// Up to `max_bytes` (at most actors::max_log_chunk) of the log file of
  /// node `position` (as status() lists it) from `offset` (negative: that
  /// many bytes before its end), read by that node (node_actor: log).
  /// not_found when no node has that position, or when the node was lost
  /// between the head's list and the request (the error names `position`,
  /// not the head's own index of the node); the head's node list, the
  /// node's handle and the chunk all within the one timeout.
  virtual result<actors::log_chunk> node_log(int32_t position, int64_t offset,
                                             int32_t max_bytes) = 0;
};

/// A cluster_source over `head` (the head process's own head actor, or an
/// embedded cluster's, or a remote head a driver attached to), asking from
/// `sys`, each request with `timeout` and `session` (the asking process's
/// session token at the head; head_actor.hpp); node logs are read with a
/// fresh credential each (node_logs.hpp: log_source), made with
/// `log_client` when complete, else the same-user MAC. Must not outlive
/// `sys`.
std::unique_ptr<cluster_source> head_source(caf::actor_system& sys, actors::head_actor head,
                                            std::string session,
                                            std::chrono::milliseconds timeout,
                                            security::tls_files log_client = {});

} // namespace dtrain::dashboard
