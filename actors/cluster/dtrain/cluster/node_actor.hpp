#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// Plugin libraries larger than this are refused (a driver refuses them
/// before anything is sent, a node when they arrive).
constexpr size_t max_plugin_bytes = size_t{256} << 20;

/// The replicas a node actor started that still run, with the placement
/// each belongs to: what a node reports when it registers again
/// (head_actor.hpp: rejoin). Shared between the node actor, which adds a
/// replica when it starts it and removes it when it ends, and the node's
/// process, which reads it (thread-safe).
class hosted_table {
public:
  void add(const caf::actor_addr& front, hosted_replica r);
  void remove(const caf::actor_addr& front);
  std::vector<hosted_replica> list() const;

private:
  mutable std::mutex mutex_;
  std::map<caf::actor_addr, hosted_replica> replicas_;
};

/// What a node agent needs to accept plugins (node_info::secret_file and
/// node_secret.hpp for the same-user rule).
struct node_options {
  /// Where received libraries are kept, as <hash>.so (plugin::install_plugin).
  std::string plugin_dir;
  /// The same-user secret drivers key their MACs with (node_secret.hpp);
  /// empty: no driver may ship code with a same-user credential (an
  /// embedded cluster's node: its driver is its own process and loads
  /// plugins itself).
  std::string secret;
  /// The file that holds `secret` (node_info::secret_file): part of what a
  /// same-user MAC covers.
  std::string secret_file;
  /// The node process's name in identity proofs, node_proof_name(): part
  /// of what a proof signs ("plugin <hash> <name>"). Known before the node
  /// listens (a TLS node publishes this actor to learn its port).
  std::string identity;
  /// TLS clusters: the CA file identity proofs are checked against; empty:
  /// identity proofs are refused (a plain cluster).
  std::string ca_file;
  /// The node process's log file (its stdout and stderr), served by
  /// log(offset, max_bytes); empty: it keeps none (an embedded cluster's
  /// node), and log answers not_found.
  std::string log_file;
  /// Where the node records the replicas it hosts (a node process's, for
  /// registering again); none: it keeps no record (an embedded cluster's).
  std::shared_ptr<hosted_table> hosted;
};

/// The fewest hex digits a replica's capability has (128 bits).
constexpr size_t min_capability_chars = 32;

/// How long a node's challenge for a plugin credential stays valid.
constexpr std::chrono::seconds plugin_challenge_lifetime{60};

/// The most bytes one log request answers, whatever it asks for.
constexpr int32_t max_log_chunk = 1 << 20;

/// A node agent: registered with the head, it hosts the replicas drivers
/// place on it and the plugins their operators come from. No actor type is
/// remotely spawnable (CAF's remote spawn answers unknown_type): drivers
/// start replicas with spawn(spec, owner, store, credential), which checks
/// the credential first, as plugin shipping does. status answers with the
/// number of replicas hosted by this process.
///
/// A credential (messages.hpp: plugin_credential) is a same-user MAC (the
/// node's secret file; node_secret.hpp) or, on a TLS node, an identity
/// proof of a client certificate of the cluster's CA: a node or head
/// certificate starts nothing and ships nothing. Either covers one request
/// (spawn_subject / spawn_proof_purpose, the plugin's hash /
/// plugin_proof_purpose), this node process and one challenge. A refusal is
/// invalid_argument saying why ("replica refused: ...", "plugin refused:
/// ...", "log read refused: ..."), and a line on the node's stderr. A node
/// made with neither a secret nor a CA (an embedded cluster's, which no
/// other process reaches) takes requests with an empty credential. spawn
/// also refuses a spec whose capability (replica_spec::capability) is
/// shorter than min_capability_chars: the replica would answer anyone.
///
/// plugin(hash) answers the operators of a plugin loaded in this process
/// (shipped earlier or preloaded by `dtrain start --plugin`), else
/// not_found. plugin(hash, bytes, credential) checks the credential, then
/// on a thread of its own checks the bytes against the hash,
/// keeps them as <plugin_dir>/<hash>.so and loads them once per hash
/// (plugin::install_plugin): the answer is the operators, or the loader's
/// error (another ABI, a missing symbol); the node stays up either way.
/// challenge hands out a single-use string for credentials, valid
/// plugin_challenge_lifetime.
///
/// log(offset, max_bytes, credential) checks the credential as spawn does
/// (for log_subject / log_proof_purpose of that offset and size: a
/// credential made for a spawn or a plugin reads nothing, nor one made for
/// another read), then reads the log file on the actor's own thread (a
/// bounded read of at most max_log_chunk bytes of a local file): from
/// `offset`, or for a negative one from that many bytes before the end,
/// clamped to the file; the answer's `next` is where to ask next (callers
/// that follow the log ask again from there). A chunk that ends before the
/// file does ends at the last whole UTF-8 character, so `next` is the start
/// of a character it would have cut (unless that leaves nothing: max_bytes
/// under 4); one that ends at the end of the file is as read. No log file,
/// or one that cannot be read: not_found / io_error naming the file.
struct node_state;  // node_actor.cpp
node_actor::behavior_type node_impl(node_actor::stateful_pointer<node_state> self,
                                    node_options options);
node_actor spawn_node(caf::actor_system& sys, node_options options = {});

/// A node process's name in identity proofs: "<host identity>/<pid>"
/// (node_info's host_id and pid).
std::string node_proof_name(const std::string& host_id, int32_t pid);

/// What an identity-proof credential for a plugin signs (with the node's
/// challenge): "plugin <hash> <node proof name>", so that a proof made for
/// one library or node process is worth nothing for another.
std::string plugin_proof_purpose(const std::string& hash, const std::string& node_name);

/// What a credential for starting the replica `spec` covers: "spawn:" and
/// the SHA-256 of the spec as CAF renders it (deep_to_string), the same in
/// the driver and the node; a credential for one replica starts no other.
std::string spawn_subject(const replica_spec& spec);

/// What an identity-proof credential for `spec` signs: "replica
/// <spawn_subject> <node proof name>".
std::string spawn_proof_purpose(const replica_spec& spec, const std::string& node_name);

/// What a credential for reading `max_bytes` of a node's log from `offset`
/// covers: "log:<offset>:<max_bytes>" (no spawn_subject or plugin hash
/// looks like it).
std::string log_subject(int64_t offset, int32_t max_bytes);

/// What an identity-proof credential for that read signs: "log
/// <log_subject> <node proof name>".
std::string log_proof_purpose(int64_t offset, int32_t max_bytes, const std::string& node_name);

/// The CUDA device indices a node offers when asked for `requested` GPUs:
/// 0 .. requested-1, or every device this process sees when requested is
/// negative. Asking for more than there are is an error naming both counts
/// and why there are no more (a CPU-only build: "built without CUDA").
result<std::vector<int32_t>> offered_gpus(int32_t requested);

} // namespace dtrain::actors
