#include "dtrain/cluster/head_auth.hpp"

#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

// Bounds the memory an unauthenticated peer can make the head hold: past
// this many live challenges the oldest go first.
constexpr size_t max_live_challenges = 4096;

security::identity_proof from_wire(const identity_msg& m) {
  security::identity_proof p;
  p.certificate_pem = m.certificate_pem;
  p.signature = m.signature;
  return p;
}

} // namespace

head_auth::head_auth(tls_identity tls, std::chrono::seconds challenge_lifetime)
  : tls_(std::move(tls)), lifetime_(challenge_lifetime),
    sessions_(std::make_shared<session_directory>(tls_.enabled())) {
  if (tls_.enabled())
    head_id_ = "head-" + security::random_hex(8);
}

// issued_ holds every challenge in the order handed out (used ones too,
// until they come to the front), so the expired and the oldest are found at
// its front without a scan.
void head_auth::expire(clock::time_point now) {
  while (!issued_.empty() &&
         (now - issued_.front().first > lifetime_ || challenges_.size() >= max_live_challenges ||
          issued_.size() >= 2 * max_live_challenges)) {
    challenges_.erase(issued_.front().second);  // nothing when it was used
    issued_.pop_front();
  }
}

void head_auth::make_idle(const caf::node_id& peer, clock::time_point now) {
  auto& entry = proven_.at(peer);
  entry.used = now;
  idle_.emplace(now, peer);
  while (idle_.size() > max_idle_proven)
    forget(idle_.begin()->second);  // the one idle the longest
}

void head_auth::touch(const caf::node_id& peer, clock::time_point now) {
  auto it = proven_.find(peer);
  if (it == proven_.end() || !it->second.watched.empty())
    return;
  idle_.erase({it->second.used, peer});
  it->second.used = now;
  idle_.emplace(now, peer);
}

result<head_hello> head_auth::hello(const std::string& nonce, clock::time_point now) {
  head_hello out;
  out.tls = enabled();
  if (!out.tls)
    return out;
  if (nonce.size() < 16 || nonce.size() > 256)
    return invalid_argument("hello: the caller's challenge must have 16 to 256 characters, not " +
                            std::to_string(nonce.size()));
  expire(now);
  out.head_id = head_id_;
  out.challenge = security::random_hex(16);
  challenges_[out.challenge] = now;
  issued_.emplace_back(now, out.challenge);
  DTRAIN_ASSIGN_OR_RETURN(auto proof,
                          security::prove_identity(tls_.files, "head " + head_id_, nonce));
  out.proof.certificate_pem = proof.certificate_pem;
  out.proof.signature = proof.signature;
  return out;
}

result<head_auth::session> head_auth::prove(const caf::node_id& peer, const std::string& what,
                                            const std::string& challenge,
                                            const identity_msg& proof, clock::time_point now) {
  if (!enabled())
    return invalid_argument("this head does not use TLS: there is nothing to prove");
  security::role wanted;
  if (what == "join")
    wanted = security::role::node;
  else if (what == "attach")
    wanted = security::role::client;
  else
    return invalid_argument("prove: '" + what + "' is neither join nor attach");
  expire(now);
  auto it = challenges_.find(challenge);
  if (it == challenges_.end())
    return invalid_argument("the challenge is unknown, used or older than " +
                            std::to_string(lifetime_.count()) + " s (ask hello again)");
  challenges_.erase(it);  // single use, whatever the outcome
  DTRAIN_ASSIGN_OR_RETURN(auto info,
                          security::check_identity(from_wire(proof), what + " " + head_id_,
                                                   challenge, tls_.files.ca, {wanted}));
  // One session per process: a new proof replaces the old one (and its
  // token), so a process cannot pile up sessions. The actors of it the
  // head watches stay watched.
  std::set<caf::actor_addr> watched;
  if (auto old = proven_.find(peer); old != proven_.end()) {
    // The node id is the message's claim (CAF 0.17): a proof of another
    // certificate for a process that holds a session would let anyone
    // with a certificate of this CA replace that process's session (and
    // have it refused everything). It waits until that process leaves.
    if (old->second.subject != info.subject)
      return invalid_argument("process " + caf::to_string(peer) + " holds a session of '" +
                              old->second.subject + "'; a proof of '" + info.subject +
                              "' for it is refused until that process leaves");
    watched = std::move(old->second.watched);
  }
  forget(peer);
  std::string token = security::random_hex(32);
  sessions_->put(token, session_directory::entry{peer, wanted, info.subject});
  const bool idle = watched.empty();
  proven_[peer] = proven{info.subject, token, std::move(watched), now};
  if (idle)
    make_idle(peer, now);  // until the head watches one of its actors
  return session{std::move(info), std::move(token)};
}

void head_auth::forget(const caf::node_id& peer) {
  auto it = proven_.find(peer);
  if (it == proven_.end())
    return;
  sessions_->erase(it->second.token);
  if (it->second.watched.empty())
    idle_.erase({it->second.used, peer});
  proven_.erase(it);
}

bool head_auth::watch(const caf::actor_addr& a) {
  auto it = a ? proven_.find(a.node()) : proven_.end();
  if (it == proven_.end())
    return false;
  if (it->second.watched.empty())
    idle_.erase({it->second.used, it->first});
  return it->second.watched.insert(a).second;
}

void head_auth::unwatch(const caf::actor_addr& a, clock::time_point now) {
  auto it = a ? proven_.find(a.node()) : proven_.end();
  if (it == proven_.end() || it->second.watched.erase(a) == 0)
    return;
  if (it->second.watched.empty())
    make_idle(it->first, now);
}

bool head_auth::idle(const caf::node_id& peer) const {
  auto it = proven_.find(peer);
  return it != proven_.end() && it->second.watched.empty();
}

std::vector<caf::node_id> head_auth::idle_peers() const {
  std::vector<caf::node_id> out;
  out.reserve(idle_.size());
  for (const auto& [used, peer] : idle_)
    out.push_back(peer);
  return out;
}

status head_auth::allowed_session(const std::string& token, const caf::node_id& peer,
                                  const caf::node_id& self, security::role needed,
                                  const std::string& request, clock::time_point now) {
  DTRAIN_RETURN_IF_ERROR(sessions_->allowed(token, peer, self, needed, request));
  touch(peer, now);  // nothing for the local session or without TLS
  return status::ok();
}

std::string head_auth::subject_of(const caf::node_id& peer) const {
  auto it = proven_.find(peer);
  return it == proven_.end() ? "" : it->second.subject;
}

} // namespace dtrain::actors
