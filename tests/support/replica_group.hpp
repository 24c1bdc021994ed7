#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/spawn.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/train/replica.hpp"

/// What the replica_runner suites share: replica options for an operator,
/// groups of runners over the shm communicator run as threads or
/// processes, and small file helpers.
namespace dtrain::testing {

using config_map = std::map<std::string, std::string>;
using runner_t = dtrain::train::replica_runner;
using replica_body = std::function<status(int rank, runner_t& runner)>;

/// Options for `op` with `config`, the default checkpoint codec and `seed`.
train::replica_options options_for(const std::string& op, config_map config,
                                   int64_t global_batch, uint64_t seed = 7);

/// A small MLP on Fashion-MNIST: an epoch takes about a second.
train::replica_options small_mlp(int64_t global_batch = 256);

/// Replica `rank` of an n-replica group over `backend` (shm by default;
/// one BLAS thread: ranks share the machine's cores; collectives time out
/// after 20 s).
result<std::unique_ptr<runner_t>> make_runner(int rank, int n, std::shared_ptr<rendezvous::store> store,
                                              const train::replica_options& options,
                                              const std::string& backend = "shm");

/// Runs `body` on every replica of a fresh n-replica group (under a 120 s
/// deadline for processes) and checks that every rank succeeded.
void run_group(int n, rank_mode mode, const train::replica_options& options,
               const replica_body& body, const std::string& backend = "shm");

train::bytes bytes_of(const tensor& t);
train::bytes bytes_of(const std::string& s);

} // namespace dtrain::testing
