#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/comm/store.hpp"

namespace dtrain::actors {

/// Spawns a trainer's rendezvous store: an in-memory key-value map in an
/// actor, reachable from every replica, local or remote. get and wait park
/// until the keys are set; the requester's timeout bounds them.
store_actor spawn_store(caf::actor_system& sys);

/// comm::store over a store actor: what replicas hand to communicators.
/// Each call is a blocking request (from a scoped actor), re-sent in slices
/// of at most 200 ms until the call's timeout, so that `cancelled` (set
/// when the replica is torn down) ends a wait within a slice: a store on a
/// dead driver's process never answers, and CAF does not say so. A local
/// store that is gone answers error_code::aborted at once. Thread-safe.
class actor_store final : public comm::store {
public:
  actor_store(caf::actor_system& sys, store_actor handle,
              std::shared_ptr<const std::atomic<bool>> cancelled = nullptr)
    : sys_(sys), handle_(std::move(handle)), cancelled_(std::move(cancelled)) {}

  using store::add;
  using store::set;
  status set(const std::string& key, const comm::bytes& value, comm::milliseconds timeout) override;
  result<comm::bytes> get(const std::string& key, comm::milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, comm::milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, comm::milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

private:
  /// Sends the request built by `ask` (given a slice timeout) until it is
  /// answered, fails for another reason than a timeout, is cancelled, or
  /// the overall timeout passes.
  template <class Reply>
  result<Reply> ask(comm::milliseconds timeout, const std::string& what,
                    const std::function<void(caf::scoped_actor&, comm::milliseconds,
                                             result<Reply>&)>& once);

  caf::actor_system& sys_;
  store_actor handle_;
  std::shared_ptr<const std::atomic<bool>> cancelled_;
};

} // namespace dtrain::actors
