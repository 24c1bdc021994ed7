#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "caf/actor_addr.hpp"
#include "caf/node_id.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/cluster/session_directory.hpp"
#include "dtrain/cluster/tls.hpp"

namespace dtrain::actors {

/// The most processes that proved a role and are idle (see head_auth) the
/// head remembers; past it the one idle the longest is forgotten.
constexpr size_t max_idle_proven = 1024;

/// The head's side of authentication (head_actor.hpp describes the
/// exchange): its challenges and the processes that proved a role. Plain
/// state, touched only by the head actor's handlers (not thread-safe),
/// except its session directory (sessions()), which it keeps up to date
/// for readers on other threads (the experiment service). With TLS off
/// every check passes and hello says so.
///
/// The head's own process is trusted by its local session
/// (local_session(), made at construction, never sent to a peer), not by
/// a node id a message claims.
///
/// Bounded: at most max_live_challenges challenges, one session per
/// process, and at most max_idle_proven idle processes. A process is
/// watched while the head monitors one of its actors that this table knows
/// of (watch: the prover, a registered node actor, a trainer's owner, the
/// sender of a request) and idle otherwise (`dtrain status` once its
/// request is answered). The head forgets a process when its connection
/// goes (forget), and the idle ones whose connection is gone when it asks
/// (idle_peers); an idle process past the bound loses its proof and must
/// prove again. Every lookup is by key (logarithmic), none scans the table.
class head_auth {
public:
  using clock = std::chrono::steady_clock;

  explicit head_auth(tls_identity tls, std::chrono::seconds challenge_lifetime);

  bool enabled() const { return tls_.enabled(); }
  const std::string& head_id() const { return head_id_; }
  /// The token of the head's own process ("" without TLS): for in-process
  /// code only (spawn_head hands it out).
  const std::string& local_session() const { return sessions_->local_token(); }
  /// Every session, for checks on other threads (thread-safe).
  std::shared_ptr<const session_directory> sessions() const { return sessions_; }

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

  /// ok when TLS is off, when `token` is the local session and `peer` the
  /// head's own process `self`, or when `token` is a session of `peer`
  /// that proved `needed`; else an error saying what is missing, for
  /// `request` (e.g. "placing trainer t"). A claimed node id alone,
  /// `self`'s included, is never enough.
  status allowed_session(const std::string& token, const caf::node_id& peer,
                         const caf::node_id& self, security::role needed,
                         const std::string& request, clock::time_point now = clock::now());

  /// Forgets what `peer` proved, and its session (its process left).
  void forget(const caf::node_id& peer);

  /// Keeps the process of actor `a` while `a` lives: true when `a` is of a
  /// process that proved and was not watched yet (the caller monitors it
  /// then and calls unwatch when it goes down).
  bool watch(const caf::actor_addr& a);

  /// Watched actor `a` went down, but not its connection: its process is
  /// idle once no watched actor of it is left.
  void unwatch(const caf::actor_addr& a, clock::time_point now = clock::now());

  /// Whether `peer` proved and no actor of it is watched.
  bool idle(const caf::node_id& peer) const;

  /// The idle processes, the longest idle first.
  std::vector<caf::node_id> idle_peers() const;

  /// The subject a process proved, or "".
  std::string subject_of(const caf::node_id& peer) const;

  /// Table sizes, for tests and bounds: processes that proved, sessions,
  /// live challenges.
  size_t proven_count() const { return proven_.size(); }
  size_t session_count() const { return sessions_->size(); }
  size_t challenge_count() const { return challenges_.size(); }

private:
  void expire(clock::time_point now);
  void make_idle(const caf::node_id& peer, clock::time_point now);
  void touch(const caf::node_id& peer, clock::time_point now);

  struct proven {
    std::string subject;
    std::string token;                  // its session
    std::set<caf::actor_addr> watched;  // empty: idle
    clock::time_point used;             // idle: the key in idle_
  };

  tls_identity tls_;
  std::chrono::seconds lifetime_;
  std::string head_id_;
  std::map<std::string, clock::time_point> challenges_;  // challenge -> issued
  std::deque<std::pair<clock::time_point, std::string>> issued_;  // oldest first; some used
  std::map<caf::node_id, proven> proven_;
  std::shared_ptr<session_directory> sessions_;  // token -> its process and role
  std::set<std::pair<clock::time_point, caf::node_id>> idle_;  // by last use
};

} // namespace dtrain::actors
