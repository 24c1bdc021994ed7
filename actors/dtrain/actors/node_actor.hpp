#pragma once

#include <string>

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// What a node agent needs to accept plugins (node_info::secret_file and
/// node_secret.hpp for the same-user rule).
struct node_options {
  /// Where received libraries are kept, as <hash>.so (plugin::install_plugin).
  std::string plugin_dir;
  /// The same-user secret drivers must present; empty: no driver may ship
  /// code with a same-user credential (an embedded cluster's node: its
  /// driver is its own process and loads plugins itself).
  std::string secret;
  /// The address drivers reach the node at: part of what an identity
  /// proof signs ("plugin <hash> <address>").
  std::string address;
  /// TLS clusters: the CA file identity proofs are checked against; empty:
  /// identity proofs are refused (a plain cluster).
  std::string ca_file;
};

/// A node agent: registered with the head, it hosts the replicas drivers
/// place on it and the plugins their operators come from. Remote drivers
/// spawn replicas on its process with CAF's remote spawn (the process
/// registers the "replica" actor type); an in-process (embedded) cluster
/// asks the node actor itself to spawn them. status answers with the
/// number of replicas hosted by this process.
///
/// plugin(hash) answers the operators of a plugin loaded in this process
/// (shipped earlier or preloaded by `dtrain start --plugin`), else
/// not_found. plugin(hash, bytes, credential) checks the credential
/// (messages.hpp: plugin_credential; a refusal is invalid_argument saying
/// why), then on a thread of its own checks the bytes against the hash,
/// keeps them as <plugin_dir>/<hash>.so and loads them once per hash
/// (plugin::install_plugin): the answer is the operators, or the loader's
/// error (another ABI, a missing symbol); the node stays up either way.
/// challenge hands out a single-use string for identity proofs.
struct node_state;  // node_actor.cpp
node_actor::behavior_type node_impl(node_actor::stateful_pointer<node_state> self,
                                    node_options options);
node_actor spawn_node(caf::actor_system& sys, node_options options = {});

/// What an identity-proof credential for a plugin signs (with the node's
/// challenge): "plugin <hash> <node address>", so that a proof made for one
/// library or node is worth nothing for another.
std::string plugin_proof_purpose(const std::string& hash, const std::string& node_address);

/// The CUDA device indices a node offers when asked for `requested` GPUs:
/// 0 .. requested-1, or every device this process sees when requested is
/// negative. Asking for more than there are is an error naming both counts
/// and why there are no more (a CPU-only build: "built without CUDA").
result<std::vector<int32_t>> offered_gpus(int32_t requested);

} // namespace dtrain::actors
