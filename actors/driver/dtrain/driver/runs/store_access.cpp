#include "dtrain/driver/runs/store_access.hpp"

#include <filesystem>

#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::runs {

result<opened_store> open_experiment_store(const std::string& address, const std::string& path,
                                           const security::tls_files& tls, bool read_only) {
  if (!address.empty() && !path.empty())
    return invalid_argument("give --address or --store, not both");
  opened_store out;
  if (!address.empty()) {
    actors::cluster::options co;
    co.address = address;
    co.tls = tls;
    DTRAIN_ASSIGN_OR_RETURN(out.cluster, actors::cluster::connect(co));
    DTRAIN_ASSIGN_OR_RETURN(out.store, out.cluster->experiments());
    return out;
  }
  const std::string file = path.empty() ? experiments::default_store_path() : path;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return not_found("no experiment store exists yet: looked for " + file +
                     " (dtrain train and dtrain tune create it; --address HOST:PORT reads a "
                     "cluster's)");
  experiments::sqlite_options so;
  so.read_only = read_only;
  DTRAIN_ASSIGN_OR_RETURN(auto local, experiments::open_sqlite_store(file, so));
  out.store = std::move(local);
  return out;
}

} // namespace dtrain::runs
