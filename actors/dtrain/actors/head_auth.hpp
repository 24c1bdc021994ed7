#pragma once

#include <chrono>
#include <map>
#include <string>

#include "caf/node_id.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/actors/tls.hpp"

namespace dtrain::actors {

/// The head's side of authentication (head_actor.hpp describes the
/// exchange): its challenges and the processes that proved a role. Plain
/// state, touched only by the head actor's handlers (not thread-safe).
/// With TLS off every check passes and hello says so.
class head_auth {
public:
  using clock = std::chrono::steady_clock;

  explicit head_auth(tls_identity tls, std::chrono::seconds challenge_lifetime);

  bool enabled() const { return tls_.enabled(); }
  const std::string& head_id() const { return head_id_; }

  /// The answer to hello: a fresh challenge and the head's proof over
  /// `nonce` (the caller's challenge: 16 to 256 characters). Errors:
  /// invalid_argument for a bad nonce; the head cannot sign.
  result<head_hello> hello(const std::string& nonce, clock::time_point now = clock::now());

  /// What a successful prove hands back.
  struct session {
    security::certificate_info certificate;
    /// A random token the process presents with requests that must not be
    /// taken on the word of a message's sender: CAF 0.17 takes a routed
    /// message's source node from the message itself, so any connected
    /// peer can claim another process's node id. Registering as a node
    /// carries the token of a session that proved a node certificate.
    std::string token;
  };

  /// Checks `proof` of a process `peer` that wants to `what` ("join": role
  /// node; "attach": role client) with a challenge from hello. The
  /// challenge is used up either way. On success the process is
  /// remembered with that role and a session token is made. Errors
  /// (invalid_argument) name the certificate and the reason.
  result<session> prove(const caf::node_id& peer, const std::string& what,
                        const std::string& challenge, const identity_msg& proof,
                        clock::time_point now = clock::now());

  /// ok when TLS is off, when `peer` is the head's own process, or when
  /// `token` is a session of `peer` that proved `needed`; else an error
  /// saying what is missing, for `request`.
  status allowed_session(const std::string& token, const caf::node_id& peer,
                         const caf::node_id& self, security::role needed,
                         const std::string& request) const;

  /// ok when TLS is off, when `peer` is the head's own process, or when it
  /// proved `needed`; else an error saying what is missing, for `request`
  /// (e.g. "placing replicas").
  status allowed(const caf::node_id& peer, const caf::node_id& self, security::role needed,
                 const std::string& request) const;

  /// Forgets what `peer` proved, and its sessions (its process left).
  void forget(const caf::node_id& peer);

  /// The subject a process proved, or "".
  std::string subject_of(const caf::node_id& peer) const;

private:
  void expire(clock::time_point now);

  struct proven {
    security::role role_;
    std::string subject;
  };

  tls_identity tls_;
  std::chrono::seconds lifetime_;
  std::string head_id_;
  std::map<std::string, clock::time_point> challenges_;  // challenge -> issued
  std::map<caf::node_id, proven> proven_;
  struct session_entry {
    proven who;
    caf::node_id peer;
  };
  std::map<std::string, session_entry> sessions_;  // token -> the session
};

} // namespace dtrain::actors
