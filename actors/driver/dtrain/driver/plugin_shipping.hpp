#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

/// The driver's side of plugins (plugin/plugin.hpp): a trainer loads the
/// libraries it names in its own process and ships them to the node
/// processes that host its replicas (node_actor.hpp, plugin handlers).
namespace dtrain::actors {

/// One plugin a trainer needs: where the driver found it, its content hash
/// and operators, and its bytes (shared: every node gets the same copy).
struct plugin_package {
  std::string path;
  std::string hash;
  std::vector<std::string> operators;
  std::shared_ptr<const std::vector<char>> bytes;
};

/// Loads each library in this process (plugin::load_plugin: the ABI check,
/// and the operators become usable by replicas of an embedded cluster) and
/// reads its bytes. Errors name the file: the loader's, or one over
/// max_plugin_bytes.
result<std::vector<plugin_package>> prepare_plugins(const std::vector<std::string>& paths);

/// The plain cluster's credential: reads the secret file that `info` (the
/// node's registration) names, asks `node` for a challenge and answers a
/// MAC keyed by the secret over that challenge, `subject` (a plugin's
/// hash, or spawn_subject) and the node process (node_secret.hpp:
/// plugin_mac_message with info's proof name and secret file and node's
/// CAF node id). The secret is never sent. Errors: an unreadable secret
/// starts with same_user_refusal; no challenge within `timeout` is
/// error_code::timeout.
result<plugin_credential> same_user_credential(caf::actor_system& sys, const node_actor& node,
                                               const std::string& subject, const node_info& info,
                                               std::chrono::milliseconds timeout);

/// The TLS cluster's credential: asks `node` for a challenge and proves
/// that this process holds the key of the client certificate `client`
/// (security::prove_identity over plugin_proof_purpose(hash, node_name), node_name from node_proof_name()).
result<plugin_credential> identity_credential(caf::actor_system& sys, const node_actor& node,
                                              const std::string& hash,
                                              const std::string& node_name,
                                              const security::tls_files& client,
                                              std::chrono::milliseconds timeout);

/// The credential for a request that runs code on `node` (registered as
/// `info`): an identity proof with `client` over `purpose` when `client` is
/// complete (a TLS cluster), else the same-user MAC over `subject`
/// (same_user_credential). Errors as theirs.
result<plugin_credential> node_credential(caf::actor_system& sys, const node_actor& node,
                                          const node_info& info, const std::string& subject,
                                          const std::string& purpose,
                                          const security::tls_files& client,
                                          std::chrono::milliseconds timeout);

/// The credential for starting replica `spec` on `node` (node_credential
/// with spawn_subject and spawn_proof_purpose).
result<plugin_credential> spawn_credential(caf::actor_system& sys, const node_actor& node,
                                           const node_info& info, const replica_spec& spec,
                                           const security::tls_files& client,
                                           std::chrono::milliseconds timeout);

/// The credential for reading `max_bytes` of `node`'s log from `offset`
/// (node_credential with log_subject and log_proof_purpose); an empty one
/// for a node in this process (`info` without an address), which asks for
/// none.
result<plugin_credential> log_credential(caf::actor_system& sys, const node_actor& node,
                                         const node_info& info, int64_t offset, int32_t max_bytes,
                                         const security::tls_files& client,
                                         std::chrono::milliseconds timeout);

/// Makes sure `node` (the node process of placement `a`; an in-process
/// node needs nothing) has every plugin loaded: asks it by hash and sends
/// the bytes of those it lacks with this process's credential. Returns how
/// many libraries were sent. The credential is an identity proof with
/// `client` when it is complete (a TLS cluster), else the same-user MAC. Errors name the plugin file, the node and the reason (the
/// node's refusal, the loader's message); a node that does not answer
/// within `timeout` is error_code::timeout.
result<int> ensure_plugins(caf::actor_system& sys, const node_actor& node, const assignment& a,
                           const std::vector<plugin_package>& plugins,
                           const security::tls_files& client, std::chrono::milliseconds timeout);

} // namespace dtrain::actors
