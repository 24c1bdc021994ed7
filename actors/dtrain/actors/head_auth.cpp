#include "dtrain/actors/head_auth.hpp"

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
  : tls_(std::move(tls)), lifetime_(challenge_lifetime) {
  if (tls_.enabled())
    head_id_ = "head-" + security::random_hex(8);
}

void head_auth::expire(clock::time_point now) {
  for (auto it = challenges_.begin(); it != challenges_.end();)
    it = now - it->second > lifetime_ ? challenges_.erase(it) : std::next(it);
  while (challenges_.size() >= max_live_challenges) {
    auto oldest = challenges_.begin();
    for (auto it = challenges_.begin(); it != challenges_.end(); ++it)
      if (it->second < oldest->second)
        oldest = it;
    challenges_.erase(oldest);
  }
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
  proven_[peer] = proven{wanted, info.subject};
  // One session per process and role: a new proof replaces the old token,
  // so a process cannot pile up sessions.
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = it->second.peer == peer ? sessions_.erase(it) : std::next(it);
  std::string token = security::random_hex(32);
  sessions_[token] = session_entry{proven{wanted, info.subject}, peer};
  return session{std::move(info), std::move(token)};
}

void head_auth::forget(const caf::node_id& peer) {
  proven_.erase(peer);
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = it->second.peer == peer ? sessions_.erase(it) : std::next(it);
}

status head_auth::allowed_session(const std::string& token, const caf::node_id& peer,
                                  const caf::node_id& self, security::role needed,
                                  const std::string& request) const {
  if (!enabled() || peer == self)
    return status::ok();
  const std::string needs = std::string(security::role_name(needed)) + " certificate";
  auto it = token.empty() ? sessions_.end() : sessions_.find(token);
  if (it == sessions_.end() || it->second.peer != peer)
    return invalid_argument(request + " needs the session of a process that proved a " + needs +
                            " to this head (hello and prove); process " + caf::to_string(peer) +
                            " presented " + (token.empty() ? "none" : "an unknown session"));
  if (it->second.who.role_ != needed)
    return invalid_argument(request + " needs a " + needs + "; the session is of '" +
                            it->second.who.subject + "', a " +
                            security::role_name(it->second.who.role_) + " certificate");
  return status::ok();
}

status head_auth::allowed(const caf::node_id& peer, const caf::node_id& self,
                          security::role needed, const std::string& request) const {
  if (!enabled() || peer == self)
    return status::ok();
  auto it = proven_.find(peer);
  const std::string needs = std::string(security::role_name(needed)) + " certificate";
  if (it == proven_.end())
    return invalid_argument(request + " needs a process that proved a " + needs +
                            " to this head (hello and prove; dtrain's own clients do it when "
                            "they connect); process " + caf::to_string(peer) + " proved none");
  if (it->second.role_ != needed)
    return invalid_argument(request + " needs a " + needs + "; process " + caf::to_string(peer) +
                            " proved '" + it->second.subject + "', a " +
                            security::role_name(it->second.role_) + " certificate");
  return status::ok();
}

std::string head_auth::subject_of(const caf::node_id& peer) const {
  auto it = proven_.find(peer);
  return it == proven_.end() ? "" : it->second.subject;
}

} // namespace dtrain::actors
