#pragma once

#include <chrono>

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/comm/store.hpp"

namespace dtrain::actors {

/// Spawns a trainer's rendezvous store: an in-memory key-value map in an
/// actor, reachable from every replica, local or remote. get and wait park
/// until the keys are set; the requester's timeout bounds them.
store_actor spawn_store(caf::actor_system& sys);

/// comm::store over a store actor: what replicas hand to communicators.
/// Each call is one blocking request (from a scoped actor) with the call's
/// timeout; a store that is gone answers with error_code::aborted at once
/// when local, or at the timeout when remote. Thread-safe.
class actor_store final : public comm::store {
public:
  actor_store(caf::actor_system& sys, store_actor handle) : sys_(sys), handle_(std::move(handle)) {}

  using store::add;
  using store::set;
  status set(const std::string& key, const comm::bytes& value, comm::milliseconds timeout) override;
  result<comm::bytes> get(const std::string& key, comm::milliseconds timeout) override;
  result<int64_t> add(const std::string& key, int64_t delta, comm::milliseconds timeout) override;
  status wait(const std::vector<std::string>& keys, comm::milliseconds timeout) override;
  result<bool> check(const std::string& key) override;

private:
  caf::actor_system& sys_;
  store_actor handle_;
};

} // namespace dtrain::actors
