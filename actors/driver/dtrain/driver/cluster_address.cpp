#include "dtrain/driver/cluster_address.hpp"

#include <cstdlib>

#include "dtrain/core/files.hpp"

namespace dtrain::actors {

result<cluster_address> resolve_cluster_address(const std::string& flag,
                                                const local_head_lookup& local_head) {
  if (!flag.empty())
    return cluster_address{flag, address_source::flag};
  if (const char* env = std::getenv("DTRAIN_ADDRESS"); env != nullptr && *env != 0)
    return cluster_address{env, address_source::environment};
  if (local_head) {
    auto local = local_head();
    if (!local)
      return local.error();
    if (!local->empty())
      return cluster_address{*local, address_source::local_head};
  }
  return cluster_address{};
}

result<cluster_address> require_cluster_address(const std::string& flag,
                                                const local_head_lookup& local_head) {
  auto found = resolve_cluster_address(flag, local_head);
  if (found && found->source == address_source::none)
    return not_found("no dtrain cluster runs on this host (no live head recorded in " +
                     dtrain_home() + "): start one with `dtrain start --head`, or give "
                     "--address HOST:PORT or $DTRAIN_ADDRESS");
  return found;
}

} // namespace dtrain::actors
