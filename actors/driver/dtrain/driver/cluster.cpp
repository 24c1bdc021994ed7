#include "dtrain/driver/cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/cluster_address.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/plugin_shipping.hpp"
#include "dtrain/cluster/replica_actor.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::actors {

result<std::unique_ptr<cluster>> cluster::connect(const options& o) {
  std::unique_ptr<cluster> c(new cluster());
  std::string address;
  if (!o.embedded) {
    DTRAIN_ASSIGN_OR_RETURN(auto found, resolve_cluster_address(o.address));
    address = found.address;
  }
  if (!address.empty()) {
    // An embedded cluster never leaves this process: no TLS to set up.
    DTRAIN_ASSIGN_OR_RETURN(c->tls_, load_tls_identity(o.tls, security::role::client));
    DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(address));
    DTRAIN_RETURN_IF_ERROR(require_tls_off_loopback(c->tls_, hp.first, "the head at " + address));
    if (c->tls_.enabled())
      enable_tls_diagnostics("dtrain driver");
  }
  c->config_ = std::make_unique<system_config>(c->tls_);
  c->system_ = std::make_unique<caf::actor_system>(*c->config_);
  if (address.empty())
    DTRAIN_RETURN_IF_ERROR(c->start_embedded(o));
  else
    DTRAIN_RETURN_IF_ERROR(c->attach(address, o.connect_timeout));
  return c;
}

status cluster::start_embedded(const options& o) {
  embedded_ = true;
  where_ = "embedded";
  DTRAIN_ASSIGN_OR_RETURN(auto gpus, offered_gpus(o.local_gpus));
  store_path_ = o.store_path.empty() ? experiments::default_store_path() : o.store_path;
  auto head = spawn_head(*system_,
                         o.open_store ? o.open_store : experiments::sqlite_opener(store_path_),
                         store_path_);
  head_ = std::move(head.head);
  session_ = std::move(head.session);
  local_node_ = spawn_node(*system_);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  node_info info{net::host_name(), "", o.local_slots > 0 ? o.local_slots : std::max(2, cores),
                 static_cast<int32_t>(gpus.size()), static_cast<int32_t>(getpid()),
                 net::host_identity(), gpus, /*secret_file=*/""};
  caf::scoped_actor self{*system_};
  status out;
  self->request(head_, std::chrono::seconds(10), register_atom::value, info, local_node_, session_)
      .receive([](int32_t) {}, [&](caf::error& e) { out = from_caf(e, "embedded cluster"); });
  return out;
}

status cluster::attach(const std::string& address, std::chrono::milliseconds timeout) {
  where_ = address;
  DTRAIN_ASSIGN_OR_RETURN(head_, connect_head(*system_, address, timeout, {}, tls_));
  DTRAIN_ASSIGN_OR_RETURN(session_,
                          authenticate(*system_, head_, tls_, address, std::chrono::seconds(10)));
  return status::ok();
}

result<std::shared_ptr<experiments::experiment_store>> cluster::experiments() {
  std::lock_guard<std::mutex> lock(experiments_mutex_);
  if (experiments_)
    return experiments_;
  const std::string where = embedded_ ? store_path_ : "the head " + where_;
  result<experiments::experiment_service> service{status(error_code::internal, "no reply")};
  {
    caf::scoped_actor self{*system_};
    self->request(head_, std::chrono::seconds(30), experiments_atom::value, session_)
        .receive([&](experiments::experiment_service& s) { service = std::move(s); },
                 [&](caf::error& e) { service = from_caf(e, "experiment store at " + where); });
  }
  if (!service)
    return service.error();
  experiments_ = std::make_shared<experiments::service_client>(*system_, *service, session_, where);
  return experiments_;
}

namespace {
// A node that does not accept a TCP connection within this is unreachable.
constexpr std::chrono::milliseconds connect_probe_timeout{3000};
} // namespace

result<replica_actor> cluster::spawn_replica(const assignment& a, const replica_spec& spec,
                                             const caf::actor& owner, const rendezvous_actor& store,
                                             std::chrono::milliseconds timeout) {
  const std::string what = "starting replica " + std::to_string(spec.rank) + " on node " +
                           std::to_string(a.node) + " (" + a.info.host + ")";
  auto node = node_of(a, timeout);
  if (!node)
    return node.error().with_context(what);
  // A node inside this process (embedded cluster) asks for no credential.
  plugin_credential credential;
  if (!a.info.address.empty()) {
    auto made = spawn_credential(*system_, *node, a.info, spec, tls_.files, timeout);
    if (!made)
      return made.error().with_context(what);
    credential = std::move(*made);
  }
  caf::scoped_actor self{*system_};
  result<replica_actor> out{status(error_code::internal, "no reply")};
  self->request(*node, timeout, spawn_atom::value, spec, owner, store, credential)
      .receive([&](replica_actor& r) { out = r; },
               [&](caf::error& e) { out = from_caf(e, what); });
  return out;
}

result<node_actor> cluster::node_of(const assignment& a, std::chrono::milliseconds timeout) {
  if (a.info.address.empty())
    return local_node_;
  const std::string what = "node " + std::to_string(a.node) + " (" + a.info.host + ", " +
                           a.info.address + ")";
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
  DTRAIN_RETURN_IF_ERROR(net::probe_tcp(hp.first, hp.second, std::min(timeout, connect_probe_timeout))
                             .with_context(what));
  // TLS: the node publishes its node actor on its port.
  if (uses_tls(*system_))
    return reach_node(a, what);
  // Plain: the port is a bare BASP port. The direct route first: CAF sends
  // to a proxy over the connection to its node when there is one, else
  // through whoever introduced it (the head).
  auto node = retry_connection_timeouts(
      [&] { return system_->middleman().connect(hp.first, hp.second); });
  if (!node)
    return from_caf(node.error(), what + ": cannot connect to " + a.info.address);
  caf::scoped_actor self{*system_};
  result<node_actor> out{status(error_code::internal, "no reply")};
  self->request(head_, timeout, caf::get_atom::value, a.node, session_)
      .receive([&](node_actor& n) { out = std::move(n); },
               [&](caf::error& e) { out = from_caf(e, what + ": asking the head for it"); });
  if (out && out->node() != *node)
    return status(error_code::unavailable, what + ": the head's node " + std::to_string(a.node) +
                                               " is no longer the process at " + a.info.address);
  return out;
}

result<node_actor> cluster::reach_node(const assignment& a, const std::string& what) {
  // By address and process: a node restarted on the same port is another
  // process, reached anew.
  const std::string key = a.info.address + " " + std::to_string(a.info.pid);
  std::lock_guard<std::mutex> lock(nodes_mutex_);
  if (auto it = nodes_.find(key); it != nodes_.end())
    return it->second;
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
  auto node = reach<node_actor>(*system_, tls_, hp.first, hp.second, a.info.address);
  if (!node)
    return node.error().with_context(what + ": cannot connect to the node at " + a.info.address);
  nodes_[key] = *node;
  return *node;
}

cluster::~cluster() {
  {
    std::lock_guard<std::mutex> lock(nodes_mutex_);
    nodes_.clear();
  }
  experiments_.reset();
  stop_hosted_replicas();
  if (head_ && embedded_)
    caf::anon_send_exit(head_, caf::exit_reason::user_shutdown);
  if (local_node_)
    caf::anon_send_exit(local_node_, caf::exit_reason::user_shutdown);
  head_ = nullptr;
  local_node_ = nullptr;
  system_.reset();
  config_.reset();
}

} // namespace dtrain::actors
