#include "dtrain/cluster/session_directory.hpp"

#include "caf/all.hpp"

namespace dtrain::actors {

namespace {

// Sessions are kept by the SHA-256 of their token: a lookup compares
// digests, so its timing tells nothing about how much of a guessed token
// matches a real one.
std::string key_of(const std::string& token) {
  return security::sha256_hex(token.data(), token.size());
}

} // namespace

session_directory::session_directory(bool tls)
  : tls_(tls), local_(tls ? security::random_hex(32) : std::string()) {}

void session_directory::put(const std::string& token, entry e) {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_[key_of(token)] = std::move(e);
}

void session_directory::erase(const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_.erase(key_of(token));
}

size_t session_directory::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

status session_directory::allowed(const std::string& token, const caf::node_id& peer,
                                  const caf::node_id& self, security::role needed,
                                  const std::string& request) const {
  if (!tls_)
    return status::ok();
  // The local token only ever comes from this process; compared in
  // constant time all the same.
  if (peer == self && !token.empty() && security::constant_time_equal(token, local_))
    return status::ok();
  const std::string needs = std::string(security::role_name(needed)) + " certificate";
  entry who;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = token.empty() ? sessions_.end() : sessions_.find(key_of(token));
    if (it == sessions_.end() || it->second.peer != peer)
      return invalid_argument(request + " needs the session of a process that proved a " + needs +
                              " to this head (hello and prove); process " +
                              caf::to_string(peer) + " presented " +
                              (token.empty() ? "none" : "an unknown session"));
    who = it->second;
  }
  if (who.role_ != needed)
    return invalid_argument(request + " needs a " + needs + "; the session is of '" +
                            who.subject + "', a " + security::role_name(who.role_) +
                            " certificate");
  return status::ok();
}

} // namespace dtrain::actors
