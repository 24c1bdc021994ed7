#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/rendezvous/store.hpp"

namespace dtrain::actors {

/// How long the store actor keeps a get or wait parked before answering it
/// with error_code::timeout ("not yet"); the asker sends it again if its
/// own timeout allows.
constexpr rendezvous::milliseconds store_park_limit{200};

/// Spawns a trainer's rendezvous store: an in-memory key-value map in an
/// actor, reachable from every replica, local or remote. get and wait park
/// until the keys are set, for at most store_park_limit: then the store answers
/// error_code::timeout and drops the entry (a timer, not the next message,
/// does it). So the parked entries are bounded by the askers alive now, not
/// by how often they asked before. status answers the parked count.
rendezvous_actor spawn_store(caf::actor_system& sys);

/// rendezvous::store over a store actor: what replicas hand to communicators.
/// Each get/wait/set/check is a blocking request (from a scoped actor),
/// asked again after each "not yet" (the store's park limit) or slice
/// without an answer (park limit + 300 ms, for a store that cannot answer:
/// one on a dead driver's process never does, and CAF does not say so),
/// until the call's timeout; `cancelled` (set when the replica is torn
/// down) ends a call within a slice. Whether to ask again is decided by
/// error codes: a CAF request timeout or a dtrain error_code::timeout from
/// the store; any other error is returned at once. A local store that is
/// gone answers error_code::aborted at once. Thread-safe.
class actor_store final : public rendezvous::store {
public:
  actor_store(caf::actor_system& sys, rendezvous_actor handle,
              std::shared_ptr<const std::atomic<bool>> cancelled = nullptr)
    : sys_(sys), handle_(std::move(handle)), cancelled_(std::move(cancelled)) {}

  using store::add;
  using store::set;
  status set(const std::string& key, const rendezvous::bytes& value, rendezvous::milliseconds timeout) override;
  result<rendezvous::bytes> get(const std::string& key, rendezvous::milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, rendezvous::milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, rendezvous::milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

private:
  /// Sends the request built by `once` (given a slice timeout) until it is
  /// answered, fails for another reason than "not yet", is cancelled, or
  /// the overall timeout passes. `once` leaves `out` untouched when the
  /// slice ended without an answer (see not_yet).
  template <class Reply>
  result<Reply> ask(rendezvous::milliseconds timeout, const std::string& what,
                    const std::function<void(caf::scoped_actor&, rendezvous::milliseconds,
                                             result<Reply>&, bool& answered)>& once);

  caf::actor_system& sys_;
  rendezvous_actor handle_;
  std::shared_ptr<const std::atomic<bool>> cancelled_;
};

} // namespace dtrain::actors
