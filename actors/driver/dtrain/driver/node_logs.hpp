#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

/// Reading node logs through the cluster, shared by `dtrain logs`
/// (apps/dtrain/logs_command.cpp) and the dashboard's log route: which nodes
/// hold a trial, and one bounded chunk of a node's log file.
namespace dtrain::actors {

/// The trainer's id in one of cluster_status::trainers ("ID: N replicas").
std::string trainer_id(const std::string& trainer_text);

/// Whether trainer `id` runs `trial`: a sweep trial's trainer is
/// "<experiment name>-<trial>-<host>-<pid>-<random>-<n>" (sweep_trials.cpp,
/// make_trainer_id), so the trial is matched between dashes; a trainer's
/// own id matches too.
bool trainer_runs_trial(const std::string& id, const std::string& trial);

/// The positions in `st.nodes` of the nodes holding the replicas of the
/// trainers that run `trial` (each once, in trainer order); the ids of
/// those trainers in `trainers` when given. Empty: no running trainer holds it.
std::vector<int32_t> trial_nodes(const cluster_status& st, const std::string& trial,
                                 std::vector<std::string>* trainers = nullptr);

/// Where a log is read from and with what right: the node's actor, its
/// registration (`info`: a plain cluster's same-user MAC needs its secret
/// file and proof name; no address: a node in this process, which asks for
/// no credential) and the reader's client certificate (`client`, complete
/// on a TLS cluster; else the same-user MAC). Printed as `label` ("node 0
/// (host, address)") in errors.
struct log_source {
  node_actor node;
  node_info info;
  security::tls_files client;
  std::string label;
};

/// Up to `max_bytes` (at most max_log_chunk) of `from`'s log from `offset`
/// (negative: that many bytes before its end), asked from `self` with a
/// fresh credential for that read (plugin_shipping.hpp: log_credential;
/// node_actor.hpp: log). Blocks at most `timeout` in all; its error names
/// the source's label, and the node's refusal.
result<log_chunk> read_log_chunk(caf::scoped_actor& self, const log_source& from, int64_t offset,
                                 int32_t max_bytes, std::chrono::milliseconds timeout);

} // namespace dtrain::actors
