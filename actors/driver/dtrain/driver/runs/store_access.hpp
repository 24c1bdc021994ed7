#pragma once

#include <memory>
#include <string>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::runs {

/// The experiment store a command reads (`dtrain experiments`, `dtrain
/// report`): through a head (then the cluster connection must live as long
/// as the store, so both are kept here), or a local SQLite file.
struct opened_store {
  std::unique_ptr<actors::cluster> cluster;
  std::shared_ptr<experiments::experiment_store> store;
};

/// Opens the store of the head at `address` (already resolved: the
/// caller's cluster_address.hpp answer, "" for none) or of the file `path`
/// (default $DTRAIN_HOME/experiments.db). Both given: invalid_argument. A missing
/// file: not_found saying where it looked and how one is made; a file that
/// is not a store, or a head that does not answer: the store's or the
/// connection's error.
result<opened_store> open_experiment_store(const std::string& address, const std::string& path,
                                           const security::tls_files& tls, bool read_only);

} // namespace dtrain::runs
