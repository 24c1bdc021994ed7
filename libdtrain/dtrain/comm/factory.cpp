#include "dtrain/comm/factory.hpp"


#include <algorithm>

#include "dtrain/comm/gloo.hpp"
#include "dtrain/comm/hierarchical.hpp"
#include "dtrain/comm/shm.hpp"
#include "dtrain/build_config.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#if DTRAIN_HAS_NCCL
#include "dtrain/comm/nccl.hpp"
#endif

namespace dtrain::comm {

namespace {

std::shared_ptr<rendezvous::store> sub(const group_options& o, const std::string& prefix) {
  return std::make_shared<rendezvous::prefix_store>(prefix, o.store);
}

template <class T>
result<std::unique_ptr<communicator>> upcast(result<std::unique_ptr<T>> made) {
  if (!made)
    return made.error();
  return std::unique_ptr<communicator>(std::move(*made));
}

// Every rank's host index (hosts numbered by their lowest rank).
result<std::vector<int>> exchange_hosts(const group_options& o) {
  std::string mine = o.host.empty() ? net::host_identity() : o.host;
  DTRAIN_RETURN_IF_ERROR(o.store->set("host/" + std::to_string(o.rank), to_bytes(mine)));
  std::vector<std::string> names;
  std::vector<int> host_of;
  for (int r = 0; r < o.size; ++r) {
    auto name = o.store->get("host/" + std::to_string(r), o.timeout);
    if (!name)
      return name.error().with_context("forming a group of " + std::to_string(o.size) +
                                       " on rank " + std::to_string(o.rank) +
                                       ": rank " + std::to_string(r) + " did not arrive");
    auto it = std::find(names.begin(), names.end(), to_string(*name));
    host_of.push_back(static_cast<int>(it - names.begin()));
    if (it == names.end())
      names.push_back(to_string(*name));
  }
  return host_of;
}

result<std::unique_ptr<communicator>> make_hierarchical(const group_options& o,
                                                        const std::vector<int>& host_of) {
  const int host = host_of[o.rank];
  int local_rank = 0, local_size = 0, leader_count = 0;
  for (int r = 0; r < o.size; ++r) {
    local_rank += r < o.rank && host_of[r] == host;
    local_size += host_of[r] == host;
    leader_count = std::max(leader_count, host_of[r] + 1);
  }
  DTRAIN_ASSIGN_OR_RETURN(auto local, upcast(shm_communicator::create(
                                          local_rank, local_size,
                                          sub(o, "local" + std::to_string(host)), o.timeout,
                                          o.shm)));
  std::unique_ptr<communicator> leaders;
  if (local_rank == 0) {
    DTRAIN_ASSIGN_OR_RETURN(leaders, upcast(gloo_communicator::create(
                                         host, leader_count, sub(o, "leaders"), o.timeout,
                                         o.bind_address)));
  }
  return std::unique_ptr<communicator>(new hierarchical_communicator(
      o.rank, o.size, o.timeout, host_of, std::move(local), std::move(leaders)));
}

} // namespace

result<std::unique_ptr<communicator>> make_communicator(const group_options& o) {
  if (o.store == nullptr)
    return invalid_argument("make_communicator: no rendezvous store");
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    return invalid_argument("make_communicator: rank " + std::to_string(o.rank) +
                            " is not in a group of " + std::to_string(o.size));
  std::string backend = o.backend;
  if (backend == "auto" && o.where.is_cuda())
    backend = "nccl";
  if (backend == "nccl") {
#if DTRAIN_HAS_NCCL
    return upcast(nccl_communicator::create(o.rank, o.size, o.where.index, sub(o, "nccl"),
                                            o.timeout));
#else
    return unavailable("make_communicator: backend nccl: dtrain was built without NCCL");
#endif
  }
  if (backend == "gloo")
    return upcast(gloo_communicator::create(o.rank, o.size, sub(o, "gloo"), o.timeout,
                                            o.bind_address));
  if (backend == "shm")
    return upcast(shm_communicator::create(o.rank, o.size, sub(o, "shm"), o.timeout, o.shm));
  if (backend != "auto" && backend != "hierarchical")
    return invalid_argument("make_communicator: unknown backend '" + o.backend +
                            "' (choose auto, shm, gloo, hierarchical or nccl)");
  DTRAIN_ASSIGN_OR_RETURN(auto host_of, exchange_hosts(o));
  bool one_host = std::all_of(host_of.begin(), host_of.end(), [](int h) { return h == 0; });
  if (backend == "auto" && one_host)
    return upcast(shm_communicator::create(o.rank, o.size, sub(o, "shm"), o.timeout, o.shm));
  return make_hierarchical(o, host_of);
}

} // namespace dtrain::comm
