#pragma once

#include <map>
#include <mutex>
#include <string>

#include "caf/node_id.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::actors {

/// The head's proven sessions (head_auth.hpp), by token, for the checks
/// made outside the head actor: the experiment service runs on other
/// threads and asks here whether a message's session token may do what it
/// asks. head_auth alone writes it (on prove, and when it forgets a
/// process: its connection went, or it was idle past the bound); readers
/// only ask. Thread-safe: every call takes a mutex, none blocks on
/// anything else.
///
/// A TLS head's own process holds one more session, minted here at
/// construction and never sent over the wire: `local_token()`, which
/// spawn_head hands to in-process code (an in-process dashboard, an
/// embedded driver). No message's claimed node id exempts anyone: CAF
/// 0.17 takes a routed message's source node from the message itself.
/// Without TLS (a plain, loopback cluster, which trusts its host's local
/// users) every check passes and there is no local token.
class session_directory {
public:
  /// A session: the process that proved, its role and certificate subject.
  struct entry {
    caf::node_id peer;
    security::role role_ = security::role::client;
    std::string subject;
  };

  /// `tls`: whether the head speaks TLS (and so checks anything).
  explicit session_directory(bool tls);

  bool enabled() const { return tls_; }
  /// The head's own process's token ("" without TLS).
  const std::string& local_token() const { return local_; }

  void put(const std::string& token, entry e);
  void erase(const std::string& token);
  size_t size() const;

  /// ok when TLS is off, when `token` is the local token and `peer` is
  /// `self` (the head's process), or when `token` is a session of `peer`
  /// that proved `needed`; else invalid_argument naming `request`, what
  /// is missing, and the certificate the session is of.
  status allowed(const std::string& token, const caf::node_id& peer, const caf::node_id& self,
                 security::role needed, const std::string& request) const;

private:
  const bool tls_;
  const std::string local_;
  mutable std::mutex mutex_;  // guards sessions_
  std::map<std::string, entry> sessions_;  // by the SHA-256 of the token
};

} // namespace dtrain::actors
