#include "dtrain/driver/plugin_shipping.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/plugin/loader.hpp"

namespace dtrain::actors {

namespace {

// Writing and loading a large library on the node takes longer than a
// question does.
constexpr std::chrono::seconds install_time{120};

result<std::vector<char>> read_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return os_error("cannot read plugin", path, errno);
  if (static_cast<size_t>(st.st_size) > max_plugin_bytes)
    return invalid_argument("plugin '" + path + "' is " + std::to_string(st.st_size >> 20) +
                            " MiB; libraries over " + std::to_string(max_plugin_bytes >> 20) +
                            " MiB are not shipped (strip its debug information?)");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return os_error("cannot read plugin", path, errno);
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  const size_t n = std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  if (n != bytes.size())
    return io_error("cannot read plugin " + path + ": short read");
  return bytes;
}

std::string node_name(const assignment& a) {
  return "node " + std::to_string(a.node) + " (" + a.info.host + ", " + a.info.address + ")";
}

// A fresh single-use challenge from `node` (challenge_atom).
result<std::string> ask_challenge(caf::actor_system& sys, const node_actor& node,
                                  std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  result<std::string> challenge{status(error_code::internal, "no reply")};
  self->request(node, timeout, challenge_atom::value)
      .receive([&](std::string& c) { challenge = std::move(c); },
               [&](caf::error& e) { challenge = from_caf(e, "asking the node for a challenge"); });
  return challenge;
}

// An identity proof with `client` over `purpose` and a challenge of `node`.
result<plugin_credential> proof_credential(caf::actor_system& sys, const node_actor& node,
                                           const std::string& purpose,
                                           const security::tls_files& client,
                                           std::chrono::milliseconds timeout) {
  DTRAIN_ASSIGN_OR_RETURN(std::string challenge, ask_challenge(sys, node, timeout));
  DTRAIN_ASSIGN_OR_RETURN(security::identity_proof proof,
                          security::prove_identity(client, purpose, challenge));
  plugin_credential c;
  c.kind = "identity-proof";
  c.challenge = std::move(challenge);
  c.certificate_pem = std::move(proof.certificate_pem);
  c.signature = std::move(proof.signature);
  return c;
}

} // namespace

result<std::vector<plugin_package>> prepare_plugins(const std::vector<std::string>& paths) {
  std::vector<plugin_package> out;
  for (const auto& path : paths) {
    DTRAIN_ASSIGN_OR_RETURN(auto bytes, read_bytes(path));
    DTRAIN_ASSIGN_OR_RETURN(plugin::loaded_plugin p, plugin::load_plugin(path));
    if (plugin::content_hash(bytes.data(), bytes.size()) != p.hash)
      return io_error("plugin '" + path + "' changed while it was being loaded; try again");
    bool again = false;
    for (const auto& earlier : out)
      again = again || earlier.hash == p.hash;
    if (again)
      continue;  // the same library twice (two names of one file)
    out.push_back({path, p.hash, p.operators,
                   std::make_shared<const std::vector<char>>(std::move(bytes))});
  }
  return out;
}

result<plugin_credential> same_user_credential(caf::actor_system& sys, const node_actor& node,
                                               const std::string& subject, const node_info& info,
                                               std::chrono::milliseconds timeout) {
  DTRAIN_ASSIGN_OR_RETURN(std::string secret, read_node_secret(info.secret_file));
  DTRAIN_ASSIGN_OR_RETURN(std::string challenge, ask_challenge(sys, node, timeout));
  plugin_credential c;
  c.kind = "same-user";
  c.signature = plugin_mac(secret, plugin_mac_message(challenge, subject,
                                                      node_proof_name(info.host_id, info.pid),
                                                      info.secret_file,
                                                      caf::to_string(node.node())));
  c.challenge = std::move(challenge);
  return c;
}

result<plugin_credential> identity_credential(caf::actor_system& sys, const node_actor& node,
                                              const std::string& hash,
                                              const std::string& node_name,
                                              const security::tls_files& client,
                                              std::chrono::milliseconds timeout) {
  return proof_credential(sys, node, plugin_proof_purpose(hash, node_name), client, timeout);
}

result<plugin_credential> node_credential(caf::actor_system& sys, const node_actor& node,
                                          const node_info& info, const std::string& subject,
                                          const std::string& purpose,
                                          const security::tls_files& client,
                                          std::chrono::milliseconds timeout) {
  if (client.complete())
    return proof_credential(sys, node, purpose, client, timeout);
  return same_user_credential(sys, node, subject, info, timeout);
}

result<plugin_credential> spawn_credential(caf::actor_system& sys, const node_actor& node,
                                           const node_info& info, const replica_spec& spec,
                                           const security::tls_files& client,
                                           std::chrono::milliseconds timeout) {
  return node_credential(sys, node, info, spawn_subject(spec),
                         spawn_proof_purpose(spec, node_proof_name(info.host_id, info.pid)),
                         client, timeout);
}

result<plugin_credential> log_credential(caf::actor_system& sys, const node_actor& node,
                                         const node_info& info, int64_t offset, int32_t max_bytes,
                                         const security::tls_files& client,
                                         std::chrono::milliseconds timeout) {
  if (info.address.empty())
    return plugin_credential{};
  return node_credential(sys, node, info, log_subject(offset, max_bytes),
                         log_proof_purpose(offset, max_bytes,
                                           node_proof_name(info.host_id, info.pid)),
                         client, timeout);
}

result<int> ensure_plugins(caf::actor_system& sys, const node_actor& node, const assignment& a,
                           const std::vector<plugin_package>& plugins,
                           const security::tls_files& client, std::chrono::milliseconds timeout) {
  if (a.info.address.empty() || plugins.empty())
    return 0;  // an in-process node shares this process's plugins
  int sent = 0;
  caf::scoped_actor self{sys};
  for (const auto& p : plugins) {
    const std::string what = "plugin '" + p.path + "' on " + node_name(a);
    status asked;
    bool loaded = false;
    self->request(node, timeout, plugin_atom::value, p.hash)
        .receive([&](std::vector<std::string>&) { loaded = true; },
                 [&](caf::error& e) { asked = from_caf(e, what); });
    if (loaded)
      continue;
    if (asked.code() != error_code::not_found)
      return asked;
    auto credential = node_credential(
        sys, node, a.info, p.hash,
        plugin_proof_purpose(p.hash, node_proof_name(a.info.host_id, a.info.pid)), client, timeout);
    if (!credential)
      return credential.error().with_context(what);
    status installed;
    self->request(node, std::max<std::chrono::milliseconds>(timeout, install_time), plugin_atom::value,
                  p.hash, *p.bytes, *credential)
        .receive([&](std::vector<std::string>&) {},
                 [&](caf::error& e) { installed = from_caf(e, what); });
    if (!installed)
      return installed;
    ++sent;
  }
  return sent;
}

} // namespace dtrain::actors
