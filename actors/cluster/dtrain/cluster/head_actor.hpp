#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/cluster/tls.hpp"

namespace dtrain::actors {

/// How often the head probes a node reported unreachable, and how long
/// each probe (a status request to its node actor) may take.
constexpr std::chrono::milliseconds head_probe_interval{1000};
constexpr std::chrono::milliseconds head_probe_timeout{1000};
/// How often the head asks each usable node for its process's resident
/// memory (status shows the last answer; a node that does not answer in
/// head_probe_timeout keeps its old figure). Never more than
/// head_polls_per_second in all: up to 200 nodes all are asked at once each
/// round; past that they take turns, a slice every head_poll_tick, each
/// node asked every nodes / head_polls_per_second seconds, so the head's
/// load does not grow with the cluster (a dead node shows sooner anyway:
/// its connection's down message, or the middleman's heartbeat timeout for
/// a hung one).
constexpr std::chrono::milliseconds head_rss_interval{2000};
constexpr std::chrono::milliseconds head_poll_tick{250};
constexpr int32_t head_polls_per_second = 100;

/// The most a node may offer: a registration past these is refused (a
/// node's figures come from the node process, whose word the head does not
/// take), so the head's sums stay far from overflow.
constexpr int32_t max_node_cpu_slots = 1 << 20;
constexpr int32_t max_node_gpus = 1024;
/// The most replicas one placement asks for (each is one assignment in
/// the answer).
constexpr int32_t max_replicas_per_placement = 1 << 16;

/// The head: the registry of nodes and their resources, and gang placement
/// of replica groups. An actor: its state is touched only by its handlers.
///
/// Resources: each node offers cpu_slots CPU slots and the CUDA devices in
/// node_info::gpu_devices, counted separately. A CPU replica takes one CPU
/// slot; a GPU replica takes one GPU (a device index no other replica holds
/// on that node) and no CPU slot. Release gives back exactly the slots and
/// device indices the trainer took. A registration whose gpus differs from
/// the length of gpu_devices, lists an index twice or a negative one, or
/// offers more than max_node_cpu_slots / max_node_gpus (or a negative
/// number) is refused with invalid_argument naming the field and the bound.
///
/// place(trainer, n, gpu, owner) is all or nothing: it assigns n units
/// (CPU slots, or GPUs when gpu) on live nodes, filling one node before the
/// next, or fails. A request larger than the whole cluster fails with
/// error_code::invalid_argument saying what is missing (a GPU request on a
/// cluster whose nodes offer no GPU says so); one that fits the cluster but
/// not its free units now fails with error_code::unavailable saying who
/// holds them (the trainer retries); one for more than
/// max_replicas_per_placement is invalid_argument. A placement is a
/// trainer id with its owner: place again with both replaces it (a
/// restart), release(trainer, owner) gives it back, and neither touches a
/// placement of the same id with another owner. The head monitors each trainer's owner
/// and each node: an owner that goes away releases its slots; a node whose
/// actor goes down (down_msg) is dead for good and must register again.
/// A node a trainer reports unreachable (unreach) is suspect: nothing is
/// placed on it, and the head probes it every head_probe_interval (timers,
/// never blocking; one chain per node, and probe messages from anyone but
/// the head itself are ignored) until it answers, which makes it usable
/// again, or goes down. status lists the usable nodes with their CPU slots and GPUs in use.
///
/// The head owns the cluster's experiment service (experiments/service.hpp),
/// spawned with it and stopped when it stops, over the store `open_store` opens
/// (lazily; `store_path` for messages); `experiments` answers its handle.
/// Without an opener every store request fails with unavailable.
///
/// Authentication (a head with an enabled tls_identity): TLS has checked
/// that a peer's certificate is from the cluster CA, but not its role. So
/// a process first asks hello with a random challenge of its own; the head
/// answers with its id, a fresh challenge (single use, valid
/// head_challenge_lifetime) and its proof of role head over "head <id>" and
/// the caller's challenge. The caller checks that proof, then sends prove
/// with "join" (a node) or "attach" (a driver), the head's challenge, and
/// its identity proof over "<join|attach> <id>" and that challenge. The
/// head checks it (security::check_identity: cluster CA, validity, role
/// node for join and client for attach) and remembers the caller's process
/// (caf::node_id) with its role, and answers a session token. Afterwards
/// every request carries that token (the last field): a TLS head serves
/// register only to the session of a process that proved role node, and
/// placement, release, unreach, status, node lookup and the experiment
/// store (the service checks each of its messages too) only to one of a
/// process that proved role client. Its own process presents the local
/// session spawn_head hands out; no node id a message claims is trusted. A
/// refusal is an error reply naming the certificate and the reason, and
/// one stderr line on the head naming the peer. A head without TLS
/// (loopback only) skips all of this: hello answers tls = false.
constexpr std::chrono::seconds head_challenge_lifetime{30};

class head_auth;

head_actor::behavior_type head_impl(head_actor::pointer self,
                                    experiments::store_opener open_store, std::string store_path,
                                    std::shared_ptr<head_auth> auth);

/// A head spawned in this process and the session token its own process
/// presents with its requests (head_auth::local_session: "" without TLS).
/// Keep the token in this process: it stands for the head itself.
struct spawned_head {
  head_actor head;
  std::string session;
};

spawned_head spawn_head(caf::actor_system& sys, experiments::store_opener open_store = {},
                        std::string store_path = "", tls_identity tls = {});

} // namespace dtrain::actors
