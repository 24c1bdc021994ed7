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
#include "dtrain/actors/plugin_shipping.hpp"
#include "dtrain/actors/replica_actor.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::actors {

system_config::system_config() : system_config(tls_identity{}) {}

system_config::system_config(const tls_identity& tls) {
  // No add_actor_type: nothing is remotely spawnable by a peer (CAF's
  // remote spawn checks nobody); replicas start through the node actor's
  // spawn, which checks the driver's credential (node_actor.hpp).
  register_types(*this);
  set("scheduler.max-threads", 2);
  // Heartbeats find hung peers (a stopped process keeps its sockets open).
  // Both settings must be the same in every process of a cluster.
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(500)});
  set("middleman.connection-timeout", caf::timespan{hang_timeout()});
  load<caf::io::middleman>();
  if (tls.enabled()) {
    openssl_certificate = tls.files.certificate;
    openssl_key = tls.files.key;
    openssl_cafile = tls.files.ca;
    load<caf::openssl::manager>();  // after the middleman, or construction throws
  }
}

bool uses_tls(caf::actor_system& sys) { return sys.has_openssl_manager(); }

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
  std::string address = o.embedded ? "" : o.address;
  if (address.empty() && !o.embedded)
    if (const char* env = std::getenv("DTRAIN_ADDRESS"))
      address = env;
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

namespace {

// CAF 0.17.6 starts an outgoing connection's `last_seen` at the clock's
// epoch and sets it only when the peer's first bytes arrive (basp_broker's
// connect handler), so the heartbeat tick that comes first (within
// middleman.heartbeat-interval, 500 ms) drops the new connection as timed
// out (sec::connection_timeout) whenever the peer's handshake takes longer
// than that: a peer on a loaded host, or one paused for a moment. Such a
// failure is tried again, up to connect_attempts in all; a peer that
// refuses or is not there fails at once, and one that stays silent (hung)
// after about connect_attempts heartbeat intervals.
constexpr int connect_attempts = 8;

template <class Connect>
auto retry_connection_timeouts(Connect&& connect) {
  auto out = connect();
  for (int i = 1; i < connect_attempts && !out && out.error() == caf::sec::connection_timeout;
       ++i)
    out = connect();
  return out;
}

// A connection to a published actor, over TLS when `sys` uses it (its
// false timeouts tried again, above). A failed TLS handshake is final (a
// refused certificate stays refused): that error comes back as
// error_code::invalid_argument, with what the diagnostics saw and our
// identity.
template <class Handle>
result<Handle> reach(caf::actor_system& sys, const tls_identity& tls, const std::string& host,
                     uint16_t port, const std::string& address) {
  if (!uses_tls(sys)) {
    auto h = retry_connection_timeouts(
        [&] { return sys.middleman().remote_actor<Handle>(host, port); });
    if (h)
      return *h;
    status why = from_caf(h.error(), "connecting");
    if (h.error() == caf::sec::disconnect_during_handshake)
      return invalid_argument(why.message() + " (does " + address +
                              " use TLS? then give this process --tls-cert, --tls-key and "
                              "--tls-ca, or put them in " + security::default_tls_dir() + ")");
    return why;
  }
  (void)take_tls_client_failure(host, port);  // an older attempt's
  auto h = retry_connection_timeouts(
      [&] { return caf::openssl::remote_actor<Handle>(sys, host, port); });
  if (h)
    return *h;
  const std::string seen = take_tls_client_failure(host, port);
  if (h.error() == caf::sec::disconnect_during_handshake || !seen.empty())
    return invalid_argument(
        explain_tls_connect_failure(tls, address, caf::to_string(h.error()), seen));
  return from_caf(h.error(), "connecting");
}

} // namespace

result<head_actor> connect_head(caf::actor_system& sys, const std::string& address,
                                std::chrono::milliseconds timeout,
                                const std::function<bool()>& give_up, const tls_identity& tls) {
  using std::chrono::milliseconds;
  DTRAIN_ASSIGN_OR_RETURN(auto hp, parse_address(address));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    status why = net::probe_tcp(hp.first, hp.second,
                                std::clamp(left, milliseconds(100), milliseconds(3000)));
    if (why) {
      auto head = reach<head_actor>(sys, tls, hp.first, hp.second, address);
      if (head)
        return *head;
      if (head.error().code() == error_code::invalid_argument)
        return head.error().with_context("cannot connect to the dtrain head at " + address);
      why = head.error();
    }
    if (std::chrono::steady_clock::now() >= deadline || (give_up && give_up()))
      return status(error_code::unavailable,
                    "cannot reach the dtrain head at " + address + " within " +
                        std::to_string(timeout.count()) + " ms: " + why.message());
    std::this_thread::sleep_for(milliseconds(200));
  }
}

result<std::string> authenticate(caf::actor_system& sys, const head_actor& head,
                                 const tls_identity& tls, const std::string& address,
                                 std::chrono::milliseconds timeout) {
  if (!tls.enabled())
    return std::string();
  const bool node = tls.role_ == security::role::node;
  const std::string what = node ? "join" : "attach";
  const std::string nonce = security::random_hex(16);
  caf::scoped_actor self{sys};
  result<head_hello> hello{status(error_code::internal, "no reply")};
  self->request(head, timeout, hello_atom::value, nonce)
      .receive([&](head_hello& h) { hello = std::move(h); },
               [&](caf::error& e) { hello = from_caf(e, "asking the head at " + address + " for a challenge"); });
  if (!hello)
    return hello.error();
  if (!hello->tls)
    return invalid_argument("the head at " + address + " answered over TLS but says it does not use it");
  security::identity_proof head_proof;
  head_proof.certificate_pem = hello->proof.certificate_pem;
  head_proof.signature = hello->proof.signature;
  auto head_cert = security::check_identity(head_proof, "head " + hello->head_id, nonce, tls.files.ca,
                                            {security::role::head});
  if (!head_cert)
    return head_cert.error().with_context("the process at " + address +
                                          " did not prove that it is the cluster's head");
  DTRAIN_ASSIGN_OR_RETURN(auto mine, security::prove_identity(tls.files, what + " " + hello->head_id,
                                                              hello->challenge));
  result<std::string> out{status(error_code::internal, "no reply")};
  self->request(head, timeout, prove_atom::value, what, hello->challenge,
                identity_msg{mine.certificate_pem, mine.signature})
      .receive([&](std::string& token) { out = std::move(token); },
               [&](caf::error& e) {
                 out = from_caf(e, "the head at " + address + " refused to let '" + tls.subject +
                                       "' " + what);
               });
  return out;
}

status cluster::attach(const std::string& address, std::chrono::milliseconds timeout) {
  where_ = address;
  DTRAIN_ASSIGN_OR_RETURN(head_, connect_head(*system_, address, timeout, {}, tls_));
  DTRAIN_ASSIGN_OR_RETURN(session_,
                          authenticate(*system_, head_, tls_, address, std::chrono::seconds(10)));
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
                                             const caf::actor& owner, const store_actor& store,
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
