#pragma once

#include <chrono>
#include <memory>

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/store/experiment_store.hpp"

namespace dtrain::dashboard {

/// Where the dashboard reads what it shows: the head's view of the cluster
/// and the experiment store it keeps. One implementation talks to a head
/// actor (head_source); tests may hand in their own.
///
/// Both calls block the caller, each bounded by the source's timeout, and
/// fail (unavailable) when the head does not answer in time. Called from
/// the dashboard server's workers, several at once: implementations must
/// be thread-safe.
class cluster_source {
public:
  virtual ~cluster_source() = default;
  /// What `dtrain status` prints: usable nodes, slots, GPUs, trainers.
  virtual result<actors::cluster_status> status() = 0;
  /// The cluster's experiment store (its read calls are what the dashboard
  /// uses); made once, kept while it answers.
  virtual result<std::shared_ptr<store::experiment_store>> store() = 0;
};

/// A cluster_source over `head` (the head process's own head actor, or an
/// embedded cluster's, or a remote head a driver attached to), asking from
/// `sys`, each request with `timeout`. Must not outlive `sys`.
std::unique_ptr<cluster_source> head_source(caf::actor_system& sys, actors::head_actor head,
                                            std::chrono::milliseconds timeout);

} // namespace dtrain::dashboard
