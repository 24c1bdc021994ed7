#include "dtrain/actors/cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "dtrain/actors/errors.hpp"
#include "dtrain/actors/experiments/client.hpp"
#include "dtrain/actors/experiments/service.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/actors/head_actor.hpp"
#include "dtrain/actors/node_actor.hpp"
#include "dtrain/actors/replica_actor.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::actors {

system_config::system_config() {
  register_types(*this);
  add_actor_type("replica", replica_front);
  set("scheduler.max-threads", 2);
  // Heartbeats find hung peers (a stopped process keeps its sockets open).
  // Both settings must be the same in every process of a cluster.
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(500)});
  set("middleman.connection-timeout", caf::timespan{hang_timeout()});
  load<caf::io::middleman>();
}

std::chrono::milliseconds hang_timeout() {
  if (const char* env = std::getenv("DTRAIN_HANG_TIMEOUT_MS")) {
    long ms = std::strtol(env, nullptr, 10);
    if (ms >= 1000)
      return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(5000);
}

result<std::pair<std::string, uint16_t>> parse_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return invalid_argument("address '" + address + "' is not HOST:PORT");
  char* end = nullptr;
  long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != 0 || port < 1 || port > 65535)
    return invalid_argument("address '" + address + "': bad port");
  return std::make_pair(address.substr(0, colon), static_cast<uint16_t>(port));
}

result<std::unique_ptr<cluster>> cluster::connect(const options& o) {
  std::unique_ptr<cluster> c(new cluster());
  c->config_ = std::make_unique<system_config>();
  c->system_ = std::make_unique<caf::actor_system>(*c->config_);
  std::string address = o.address;
  if (address.empty())
    if (const char* env = std::getenv("DTRAIN_ADDRESS"))
      address = env;
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
  head_ = spawn_head(*system_, o.open_store ? o.open_store : experiments::sqlite_opener(store_path_),
                     store_path_);
  local_node_ = spawn_node(*system_);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  node_info info{net::host_name(), "", o.local_slots > 0 ? o.local_slots : std::max(2, cores),
                 static_cast<int32_t>(gpus.size()), static_cast<int32_t>(getpid()),
                 net::host_identity(), gpus, /*secret_file=*/""};
  caf::scoped_actor self{*system_};
  status out;
  self->request(head_, std::chrono::seconds(10), register_atom::value, info, local_node_)
      .receive([](int32_t) {}, [&](caf::error& e) { out = from_caf(e, "embedded cluster"); });
  return out;
}

result<head_actor> connect_head(caf::actor_system& sys, const std::string& address,
                                std::chrono::milliseconds timeout,
                                const std::function<bool()>& give_up) {
  using std::chrono::milliseconds;
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(address));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    status why = net::probe_tcp(hp.first, hp.second,
                                std::clamp(left, milliseconds(100), milliseconds(3000)));
    if (why) {
      auto head = sys.middleman().remote_actor<head_actor>(hp.first, hp.second);
      if (head)
        return *head;
      why = from_caf(head.error(), "connecting");
    }
    if (std::chrono::steady_clock::now() >= deadline || (give_up && give_up()))
      return status(error_code::unavailable,
                    "cannot reach the dtrain head at " + address + " within " +
                        std::to_string(timeout.count()) + " ms: " + why.message());
    std::this_thread::sleep_for(milliseconds(200));
  }
}

status cluster::attach(const std::string& address, std::chrono::milliseconds timeout) {
  where_ = address;
  DTRAIN_ASSIGN_OR_RETURN(head_, connect_head(*system_, address, timeout));
  return status::ok();
}

result<std::shared_ptr<store::experiment_store>> cluster::experiments() {
  std::lock_guard<std::mutex> lock(experiments_mutex_);
  if (experiments_)
    return experiments_;
  const std::string where = embedded_ ? store_path_ : "the head " + where_;
  result<experiments::experiment_service> service{status(error_code::internal, "no reply")};
  {
    caf::scoped_actor self{*system_};
    self->request(head_, std::chrono::seconds(30), experiments_atom::value)
        .receive([&](experiments::experiment_service& s) { service = std::move(s); },
                 [&](caf::error& e) { service = from_caf(e, "experiment store at " + where); });
  }
  if (!service)
    return service.error();
  experiments_ = std::make_shared<experiments::service_client>(*system_, *service, where);
  return experiments_;
}

namespace {
// A node that does not accept a TCP connection within this is unreachable.
constexpr std::chrono::milliseconds connect_probe_timeout{3000};
} // namespace

result<replica_actor> cluster::spawn_replica(const assignment& a, const replica_spec& spec,
                                             const caf::actor& owner, const store_actor& store,
                                             std::chrono::milliseconds timeout) {
  const std::string what = "starting replica " + std::to_string(spec.rank) + " on node " +
                           std::to_string(a.node) + " (" + a.info.host + ")";
  if (a.info.address.empty()) {
    // A node inside this process (embedded cluster).
    caf::scoped_actor self{*system_};
    result<replica_actor> out{status(error_code::internal, "no reply")};
    self->request(local_node_, timeout, spawn_atom::value, spec, owner, store)
        .receive([&](replica_actor& r) { out = r; },
                 [&](caf::error& e) { out = from_caf(e, what); });
    return out;
  }
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
  DTRAIN_RETURN_IF_ERROR(net::probe_tcp(hp.first, hp.second, std::min(timeout, connect_probe_timeout))
                             .with_context(what));
  auto node = system_->middleman().connect(hp.first, hp.second);
  if (!node)
    return from_caf(node.error(), what + ": cannot connect to " + a.info.address);
  auto spawned = system_->middleman().remote_spawn<replica_actor>(
      *node, "replica", caf::make_message(spec, owner, store), timeout);
  if (!spawned)
    return from_caf(spawned.error(), what + " by remote spawn");
  return *spawned;
}

result<node_actor> cluster::node_of(const assignment& a, std::chrono::milliseconds timeout) {
  if (a.info.address.empty())
    return local_node_;
  const std::string what = "node " + std::to_string(a.node) + " (" + a.info.host + ", " +
                           a.info.address + ")";
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(a.info.address));
  DTRAIN_RETURN_IF_ERROR(net::probe_tcp(hp.first, hp.second, std::min(timeout, connect_probe_timeout))
                             .with_context(what));
  // The direct route first: CAF sends to a proxy over the connection to its
  // node when there is one, else through whoever introduced it (the head).
  auto node = system_->middleman().connect(hp.first, hp.second);
  if (!node)
    return from_caf(node.error(), what + ": cannot connect to " + a.info.address);
  caf::scoped_actor self{*system_};
  result<node_actor> out{status(error_code::internal, "no reply")};
  self->request(head_, timeout, caf::get_atom::value, a.node)
      .receive([&](node_actor& n) { out = std::move(n); },
               [&](caf::error& e) { out = from_caf(e, what + ": asking the head for it"); });
  if (out && out->node() != *node)
    return status(error_code::unavailable, what + ": the head's node " + std::to_string(a.node) +
                                               " is no longer the process at " + a.info.address);
  return out;
}

cluster::~cluster() {
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
