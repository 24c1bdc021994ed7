#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/cluster/experiment_protocol.hpp"
#include "dtrain/train/metrics.hpp"

namespace dtrain::train {

// The library's metric structs on the wire: their inspect overloads live in
// their own namespace, where CAF's serializers find them by ADL.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_progress& x) {
  return f(caf::meta::type_name("step_progress"), x.rank, x.epoch, x.step, x.resumed_at,
           x.steps_per_epoch, x.samples, x.loss, x.seconds, x.samples_per_second);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, epoch_metrics& x) {
  return f(caf::meta::type_name("epoch_metrics"), x.epoch, x.steps, x.samples, x.loss,
           x.accuracy, x.seconds, x.samples_per_second, x.allreduce_seconds, x.lr, x.preempted,
           x.resume_batch, x.extra);
}

} // namespace dtrain::train

/// The control plane's messages: atoms, message types with their inspect
/// overloads, and the typed interfaces of the head, node, replica and store
/// actors. Every process calls register_types() on its config before
/// constructing its actor_system, so that the wire names agree.
namespace dtrain::actors {

// Atoms: at most 10 characters (CAF 0.17).
using register_atom = caf::atom_constant<caf::atom("register")>;
using place_atom = caf::atom_constant<caf::atom("place")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using setup_atom = caf::atom_constant<caf::atom("setup")>;
using train_atom = caf::atom_constant<caf::atom("train")>;
using valid_atom = caf::atom_constant<caf::atom("validate")>;
using save_atom = caf::atom_constant<caf::atom("save")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
using params_atom = caf::atom_constant<caf::atom("params")>;
using hash_atom = caf::atom_constant<caf::atom("hash")>;
using preempt_atom = caf::atom_constant<caf::atom("preempt")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using set_atom = caf::atom_constant<caf::atom("set")>;
using wait_atom = caf::atom_constant<caf::atom("wait")>;
using check_atom = caf::atom_constant<caf::atom("check")>;
using add_atom = caf::atom_constant<caf::atom("add")>;
using unreach_atom = caf::atom_constant<caf::atom("unreach")>;
using probe_atom = caf::atom_constant<caf::atom("probe")>;
using sweep_atom = caf::atom_constant<caf::atom("sweep")>;
using experiments_atom = caf::atom_constant<caf::atom("experiment")>;
using plugin_atom = caf::atom_constant<caf::atom("plugin")>;
using challenge_atom = caf::atom_constant<caf::atom("challenge")>;
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using prove_atom = caf::atom_constant<caf::atom("prove")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using log_atom = caf::atom_constant<caf::atom("log")>;
using rss_atom = caf::atom_constant<caf::atom("rss")>;
using predict_atom = caf::atom_constant<caf::atom("predict")>;
using reform_atom = caf::atom_constant<caf::atom("reform")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using interrupt_atom = caf::atom_constant<caf::atom("interrupt")>;
using resize_atom = caf::atom_constant<caf::atom("resize")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;

/// A node as it registers with the head.
struct node_info {
  std::string host;          // host name, for people
  std::string address;       // "ADDRESS:PORT" its peers reach it at; empty = in-process
  int32_t cpu_slots = 1;
  int32_t gpus = 0;          // = gpu_devices.size()
  int32_t pid = 0;
  std::string host_id;       // net::host_identity(): ranks compare these
  std::vector<int32_t> gpu_devices;  // CUDA device indices offered (node_actor.hpp: offered_gpus)
  /// A file only the node's user can read, holding the secret a driver of
  /// the same user presents to ship plugins (node_secret.hpp); empty: none.
  std::string secret_file;
  /// The cores its replicas may use together: `dtrain start --cpus`, else
  /// the host's (shared then with the replicas of every process on the
  /// host); 0: not said (an embedded cluster's node).
  int32_t cpus = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_info& x) {
  return f(caf::meta::type_name("node_info"), x.host, x.address, x.cpu_slots, x.gpus, x.pid,
           x.host_id, x.gpu_devices, x.secret_file, x.cpus);
}

/// What a driver presents with a plugin it ships to a node, a replica it
/// starts there or a read of its log (node_actor.hpp): proof that it may.
///   kind "same-user": `signature` is an HMAC-SHA256, keyed by the
///     content of the node's secret file (node_info::secret_file, readable
///     only by the node's user), over plugin_mac_message(challenge, request,
///     node) (node_secret.hpp): the plain (loopback) cluster's rule. The
///     secret itself is never sent.
///   kind "identity-proof": a security::identity_proof of a client
///     certificate of the cluster's CA (certificate_pem, signature) over the
///     purpose ("plugin ...", "replica ...", node_actor.hpp) and `challenge`.
/// Both: `challenge` is a single-use string the node handed out
/// (challenge_atom) less than plugin_challenge_lifetime ago.
struct plugin_credential {
  std::string kind;
  std::string challenge;
  std::string certificate_pem;
  std::string signature;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plugin_credential& x) {
  return f(caf::meta::type_name("plugin_credential"), x.kind, x.challenge,
           x.certificate_pem, x.signature);
}

/// A replica a node process hosts, as the node reports it when it
/// registers again (head_actor.hpp: rejoin): the placement it belongs to
/// (trainer id and owner) and the unit it holds (a CUDA device, or -1 for
/// a CPU slot).
struct hosted_replica {
  std::string trainer;
  caf::actor owner;
  int32_t gpu = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hosted_replica& x) {
  return f(caf::meta::type_name("hosted_replica"), x.trainer, x.owner, x.gpu);
}

/// One replica's place: the node (index into the head's table and its
/// registration) and its rank on that node.
struct assignment {
  int32_t node = 0;
  node_info info;
  int32_t local_rank = 0;
  int32_t gpu = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, assignment& x) {
  return f(caf::meta::type_name("assignment"), x.node, x.info, x.local_rank, x.gpu);
}

/// Everything a replica needs to join its group and build its operator.
struct replica_spec {
  std::string trainer;        // trainer id
  int32_t generation = 0;     // restart generation: part of the store prefix
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t local_rank = 0;
  int32_t node_rank = 0;
  std::string host;           // host identity, for the communicator's host grouping
  std::string bind_address = "127.0.0.1";  // where its communicator listens (the node's address)
  std::string backend = "auto";
  int32_t gpu = -1;           // CUDA device, or -1 for the CPU
  int64_t timeout_ms = 30000; // collectives and rendezvous
  std::string operator_name;
  std::vector<std::string> plugins;  // hashes of the plugins the operator may come from
  std::map<std::string, std::string> config;
  int64_t global_batch_size = 128;
  int32_t aggregation_frequency = 1;
  bool average_training_metrics = true;
  std::string compression = "none";
  uint64_t seed = 0;
  double progress_seconds = 0;  // progress this often during an epoch (0: none)
  /// Where this replica sends its progress (progress_atom, progress_msg);
  /// none: it prints "[rank R] ..." lines to its own stdout instead.
  caf::actor progress_sink;
  std::string precision = "fp32";  // GEMM compute (tensor/precision.hpp)
  int32_t cpus = 0;  // CPU threads (trainer_config::cpus_per_replica); 0: the host's share
  int64_t bucket_bytes = 0;  // gradient sync buckets (trainer_config::bucket_bytes); 0: the default
  int32_t zero_stage = 0;    // trainer_config::zero_stage
  double clip_grad_norm = 0; // trainer_config::clip_grad_norm
  /// Asynchronous checkpoints (trainer_config::checkpoint_every_steps,
  /// checkpoint_every_seconds) under checkpoint_root (the trainer's
  /// checkpoint_dir), keeping checkpoint_keep; off when the root is empty
  /// or both periods are 0.
  std::string checkpoint_root;
  int32_t checkpoint_keep = 2;
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_seconds = 0;
  /// The secret every message to the replica carries (replica_actor
  /// below): drawn by its trainer for this replica alone (each rank and
  /// generation its own; security::random_hex, at least 128 bits), covered by
  /// the spawn credential: only its driver and its node hold it. Never printed.
  std::string capability;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_spec& x) {
  return f(caf::meta::type_name("replica_spec"), x.trainer, x.generation, x.rank, x.world_size,
           x.local_rank, x.node_rank, x.host, x.bind_address, x.backend, x.gpu, x.timeout_ms, x.operator_name,
           x.plugins, x.config, x.global_batch_size, x.aggregation_frequency, x.average_training_metrics,
           x.compression, x.seed, x.progress_seconds, x.progress_sink, x.precision, x.cpus,
           x.bucket_bytes, x.zero_stage, x.clip_grad_norm, x.checkpoint_root, x.checkpoint_keep, x.checkpoint_every_steps,
           x.checkpoint_every_seconds, x.capability);
}

/// A replica's progress and an epoch's metrics go on the wire as the
/// library's own structs (train/metrics.hpp); these are their wire names in
/// the cluster side's code. The struct's rank is the replica's.
using progress_msg = train::step_progress;
using metrics_msg = train::epoch_metrics;

/// A replica's outputs for rows [begin, begin + rows) of an input set
/// (train::replica_runner::predict), with their targets.
struct predict_chunk {
  int64_t begin = 0;
  int64_t width = 0;          // outputs per row
  int64_t target_width = 0;   // targets per row
  bool classification = true; // the operator counts accuracy (class-index targets)
  std::vector<float> outputs;
  std::vector<float> targets;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, predict_chunk& x) {
  return f(caf::meta::type_name("predict_chunk"), x.begin, x.width, x.target_width,
           x.classification, x.outputs, x.targets);
}

/// An epoch's training metrics as checkpoint manifest entries ("epoch.*"),
/// written with the checkpoint saved right after that epoch, and read back:
/// a sweep whose driver died between the checkpoint and the epoch's
/// report rebuilds the report from them instead of training again.
std::map<std::string, double> epoch_manifest_entries(const metrics_msg& m);
/// The metrics_msg of epoch `epoch` from a manifest's entries; nullopt
/// when the manifest has none for that epoch (written before, or by save()).
std::optional<metrics_msg> epoch_from_manifest(const std::map<std::string, double>& entries,
                                               int64_t epoch);

/// A node the head no longer places on: "suspect" (a trainer could not
/// reach it; the head probes it until it answers, then it is usable again)
/// or "dead" (its node actor went down; a restarted node registers anew).
struct lost_node {
  int32_t node_id = 0;            // its index in the head's table
  node_info info;
  std::string state;              // "suspect" or "dead"
  int64_t lost_at = 0;            // unix seconds when it stopped being usable
  double last_heard_seconds = -1; // since the head last heard from it
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lost_node& x) {
  return f(caf::meta::type_name("lost_node"), x.node_id, x.info, x.state, x.lost_at,
           x.last_heard_seconds);
}

/// The head's own load since it started: what the scale harness
/// (tools/bench/scale) and `dtrain status` read to tell what a cluster's
/// size costs the head.
struct head_load {
  int64_t node_polls = 0;  // requests the head sent to nodes (RSS rounds, probes of suspects)
  int64_t requests = 0;    // requests it served (placement, status, registration, ...)
  /// Handler time of the last placements (at most head_detail's window):
  /// median and 99th percentile in milliseconds, and how many were timed.
  double place_p50_ms = 0;
  double place_p99_ms = 0;
  int32_t placements_timed = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, head_load& x) {
  return f(caf::meta::type_name("head_load"), x.node_polls, x.requests, x.place_p50_ms,
           x.place_p99_ms, x.placements_timed);
}

/// What `dtrain status` prints: the usable nodes (a node's position in
/// `nodes` is the index `dtrain status` and `dtrain logs --node` use).
struct cluster_status {
  std::vector<node_info> nodes;
  std::vector<int32_t> slots_used;              // per node: CPU slots in use
  std::vector<std::string> trainers;            // "id: N replicas"
  std::vector<int32_t> gpus_used;               // per node: GPUs in use
  /// Per node: its index in the head's table (head_actor: get), which
  /// differs from its position once an earlier node is gone.
  std::vector<int32_t> node_ids;
  /// Per trainer: the positions in `nodes` of the nodes holding its replicas.
  std::vector<std::vector<int32_t>> trainer_nodes;
  std::vector<int32_t> replicas;                // per node: replicas placed there
  /// Per node: its process's resident memory in bytes, as the node last
  /// told the head (head_rss_interval); -1 not known yet.
  std::vector<int64_t> rss_bytes;
  /// Per node: seconds since the head last heard from it (its registration,
  /// an RSS answer every head_rss_interval, a probe's answer).
  std::vector<double> last_heard_seconds;
  /// The nodes that are not usable (suspect or dead), not in `nodes`, in
  /// the head's table order.
  std::vector<lost_node> lost;
  head_load load;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_status& x) {
  return f(caf::meta::type_name("cluster_status"), x.nodes, x.slots_used, x.trainers,
           x.gpus_used, x.node_ids, x.trainer_nodes, x.replicas, x.rss_bytes,
           x.last_heard_seconds, x.lost, x.load);
}

/// A piece of a node's log file (node_actor: log).
struct log_chunk {
  std::string bytes;
  int64_t offset = 0;  // where `bytes` begin in the file
  int64_t next = 0;    // the offset to ask for next (offset + bytes.size())
  int64_t size = 0;    // the file's size when it was read
  std::string path;    // the file, on the node's host
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_chunk& x) {
  return f(caf::meta::type_name("log_chunk"), x.bytes, x.offset, x.next, x.size, x.path);
}

/// A security::identity_proof on the wire: a certificate (PEM) and a
/// signature, made with its key, over a purpose and a challenge.
struct identity_msg {
  std::string certificate_pem;
  std::string signature;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, identity_msg& x) {
  return f(caf::meta::type_name("identity_msg"), x.certificate_pem, x.signature);
}

/// The head's answer to hello (head_actor.hpp, authentication): whether it
/// speaks TLS, its id (part of every purpose signed for it), a fresh
/// single-use challenge for the caller to sign, and the head's own proof
/// of role head over "head <id>" and the caller's challenge.
struct head_hello {
  bool tls = false;
  std::string head_id;
  std::string challenge;
  identity_msg proof;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, head_hello& x) {
  return f(caf::meta::type_name("head_hello"), x.tls, x.head_id, x.challenge, x.proof);
}

/// The rendezvous store of one trainer (rendezvous::store semantics, see
/// rendezvous_actor.hpp). get and wait answer when the key(s) exist, or with
/// error_code::timeout after the store's park limit; status answers how
/// many requests are parked; sweep is the store's own timer.
using rendezvous_actor = caf::typed_actor<
    caf::replies_to<set_atom, std::string, std::vector<char>>::with<caf::ok_atom>,
    caf::replies_to<caf::get_atom, std::string>::with<std::vector<char>>,
    caf::replies_to<add_atom, std::string, int64_t>::with<int64_t>,
    caf::replies_to<wait_atom, std::vector<std::string>>::with<caf::ok_atom>,
    caf::replies_to<check_atom, std::string>::with<bool>,
    caf::replies_to<status_atom>::with<int32_t>,
    caf::reacts_to<sweep_atom>>;

/// A replica: one model replica and its communicator (replica_actor.hpp).
/// Every message's first string is the replica's capability
/// (replica_spec::capability); one without it is refused.
using replica_actor = caf::typed_actor<
    caf::replies_to<setup_atom, std::string>::with<caf::ok_atom>,
    caf::replies_to<train_atom, std::string>::with<metrics_msg>,
    caf::replies_to<valid_atom, std::string>::with<metrics_msg>,
    caf::replies_to<save_atom, std::string, std::string, int32_t>::with<caf::ok_atom>,  // root, keep
    caf::replies_to<restore_atom, std::string, std::string>::with<caf::ok_atom>,
    caf::replies_to<params_atom, std::string>::with<std::vector<char>>,
    caf::replies_to<hash_atom, std::string>::with<uint64_t>,
    caf::replies_to<preempt_atom, std::string>::with<caf::ok_atom>,
    caf::replies_to<predict_atom, std::string, std::string, int64_t, int64_t>::with<
        predict_chunk>,  // input, rows
    caf::replies_to<predict_atom, std::string, std::string>::with<int64_t>,  // input -> row count
    // Live recovery (replica_actor.hpp): status answers at once, even in an
    // epoch (is the replica there?); interrupt aborts the collectives in
    // flight, keeping the replica; reform moves it into a new group (its
    // spec there); sync agrees on the group's state after it formed:
    // {source rank, bytes moved, microseconds}.
    caf::replies_to<status_atom, std::string>::with<int32_t>,
    caf::replies_to<interrupt_atom, std::string, std::string>::with<caf::ok_atom>,  // why
    caf::replies_to<reform_atom, std::string, replica_spec>::with<caf::ok_atom>,
    caf::replies_to<sync_atom, std::string>::with<std::vector<int64_t>>>;

/// A node agent (node_actor.hpp): hosts replicas and the plugins they need.
/// plugin(hash): the operators of that plugin when it is loaded here, else
/// not_found; plugin(hash, bytes, credential): installs and loads it;
/// challenge: a single-use string for the credential spawn, plugin and log need.
/// log(offset, max_bytes, credential): up to max_bytes of the node process's
/// log file from offset (negative: that many bytes before its end), see
/// node_actor.hpp.
using node_actor = caf::typed_actor<
    caf::replies_to<spawn_atom, replica_spec, caf::actor, rendezvous_actor, plugin_credential>::with<
        replica_actor>,
    caf::replies_to<status_atom>::with<int32_t>,
    caf::replies_to<plugin_atom, std::string>::with<std::vector<std::string>>,
    caf::replies_to<plugin_atom, std::string, std::vector<char>, plugin_credential>::with<
        std::vector<std::string>>,
    caf::replies_to<challenge_atom>::with<std::string>,
    caf::replies_to<log_atom, int64_t, int32_t, plugin_credential>::with<log_chunk>,
    caf::replies_to<rss_atom>::with<int64_t>>;  // the process's resident bytes (-1 unknown)

/// The head (head_actor.hpp): node registry, resources, placement. Every
/// request but hello and prove ends with the sender's session token
/// (cluster::session(); head_auth.hpp).
using head_actor = caf::typed_actor<
    caf::replies_to<register_atom, node_info, node_actor, std::string>::with<int32_t>,  // + session token
    // A node registering again: its index before and the replicas it hosts.
    caf::replies_to<rejoin_atom, node_info, node_actor, int32_t, std::vector<hosted_replica>,
                    std::string>::with<int32_t>,
    caf::replies_to<place_atom, std::string, int32_t, bool, caf::actor, std::string>::with<
        std::vector<assignment>>,  // trainer, replicas, gpu, owner, session
    caf::replies_to<release_atom, std::string, caf::actor, std::string>::with<caf::ok_atom>,  // trainer, owner, session
    // trainer, assignments it keeps, how many more, gpu, owner, session
    caf::replies_to<resize_atom, std::string, std::vector<assignment>, int32_t, bool, caf::actor,
                    std::string>::with<std::vector<assignment>>,
    caf::replies_to<unreach_atom, int32_t, std::string>::with<caf::ok_atom>,
    caf::reacts_to<probe_atom, int32_t>,  // the head's own timer (head_actor.hpp)
    caf::reacts_to<rss_atom>,             // the head's own timer: asks the nodes' RSS
    caf::replies_to<status_atom, std::string>::with<cluster_status>,
    caf::replies_to<caf::get_atom, int32_t, std::string>::with<node_actor>,
    caf::replies_to<experiments_atom, std::string>::with<experiments::experiment_service>,
    caf::replies_to<hello_atom, std::string>::with<head_hello>,
    caf::replies_to<prove_atom, std::string, std::string, identity_msg>::with<std::string>>;  // -> session token

/// Registers every message type and handle type above (all processes).
void register_types(caf::actor_system_config& cfg);

/// Error category "dtrain": code = dtrain::error_code, context = message.
caf::error to_caf_error(int code, const std::string& message);

} // namespace dtrain::actors
