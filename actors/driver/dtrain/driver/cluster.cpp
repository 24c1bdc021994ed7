#include "dtrain/driver/cluster.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
  watch_head();
  return status::ok();
}

// An actor of this process monitors the head: its down message marks it
// gone, for head() to attach again.
void cluster::watch_head() const {
  auto gone = std::make_shared<std::atomic<bool>>(false);
  head_gone_ = gone;
  head_watch_ = system_->spawn(
      [gone](caf::event_based_actor* self, head_actor head) -> caf::behavior {
        self->monitor(head);
        self->set_down_handler([=](caf::down_msg&) {
          gone->store(true);
          self->quit();
        });
        return {[](caf::ok_atom) {}};
      },
      head_);
}

void cluster::reattach_if_gone() const {
  if (!head_gone_ || !head_gone_->load())
    return;
  auto head = connect_head(*system_, where_, reattach_timeout, {}, tls_);
  result<std::string> session =
      head ? authenticate(*system_, *head, tls_, where_, std::chrono::seconds(10))
           : result<std::string>(head.error());
  if (!session) {
    std::fprintf(stderr, "dtrain driver: the head at %s went away and is not back: %s\n",
                 where_.c_str(), session.error().message().c_str());
    return;
  }
  head_ = *head;
  session_ = std::move(*session);
  watch_head();
  std::fprintf(stderr, "dtrain driver: the head at %s went away; attached to it again\n",
               where_.c_str());
}

head_actor cluster::head() const {
  std::lock_guard<std::mutex> lock(head_mutex_);
  reattach_if_gone();
  return head_;
}

std::string cluster::session() const {
  std::lock_guard<std::mutex> lock(head_mutex_);
  reattach_if_gone();
  return session_;
}

namespace {

using experiments::experiment_store;

// The store of a cluster attached by address (cluster::experiments): every
// call goes to the experiment service of the head that head() answers now,
// through a client made anew when that head is another.
class following_store final : public experiment_store {
public:
  following_store(cluster& c, std::string where) : cluster_(c), where_(std::move(where)) {}

  // The client for the head of now, made if need be.
  result<std::shared_ptr<experiment_store>> current() {
    std::lock_guard<std::mutex> lock(mutex_);
    const head_actor head = cluster_.head();
    if (client_ && head == head_)
      return client_;
    const std::string session = cluster_.session();
    result<experiments::experiment_service> service{status(error_code::internal, "no reply")};
    {
      caf::scoped_actor self{cluster_.system()};
      self->request(head, std::chrono::seconds(30), experiments_atom::value, session)
          .receive([&](experiments::experiment_service& s) { service = std::move(s); },
                   [&](caf::error& e) { service = from_caf(e, "experiment store at " + where_); });
    }
    if (!service)
      return service.error();
    client_ = std::make_shared<experiments::service_client>(cluster_.system(), *service, session,
                                                            where_);
    head_ = head;
    return client_;
  }

  result<int64_t> create_experiment(const experiments::experiment_row& e) override {
    return with([&](experiment_store& s) { return s.create_experiment(e); });
  }
  status update_experiment(const experiments::experiment_row& e) override {
    return with([&](experiment_store& s) { return s.update_experiment(e); });
  }
  result<experiments::experiment_row> experiment(int64_t id) override {
    return with([&](experiment_store& s) { return s.experiment(id); });
  }
  result<std::vector<experiments::experiment_row>> experiments() override {
    return with([&](experiment_store& s) { return s.experiments(); });
  }
  status delete_experiment(int64_t id) override {
    return with([&](experiment_store& s) { return s.delete_experiment(id); });
  }
  status put_trial(const experiments::trial_row& t) override {
    return with([&](experiment_store& s) { return s.put_trial(t); });
  }
  result<std::vector<experiments::trial_row>> trials(int64_t experiment) override {
    return with([&](experiment_store& s) { return s.trials(experiment); });
  }
  status add_metrics(const std::vector<experiments::metric_row>& rows) override {
    return with([&](experiment_store& s) { return s.add_metrics(rows); });
  }
  result<std::vector<experiments::metric_row>> metrics(int64_t experiment,
                                                       const std::string& trial) override {
    return with([&](experiment_store& s) { return s.metrics(experiment, trial); });
  }
  status put_checkpoint(const experiments::checkpoint_row& c) override {
    return with([&](experiment_store& s) { return s.put_checkpoint(c); });
  }
  result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t experiment,
                                                               const std::string& trial) override {
    return with([&](experiment_store& s) { return s.checkpoints(experiment, trial); });
  }
  status add_lineage(const experiments::lineage_row& l) override {
    return with([&](experiment_store& s) { return s.add_lineage(l); });
  }
  result<std::vector<experiments::lineage_row>> lineage(int64_t experiment) override {
    return with([&](experiment_store& s) { return s.lineage(experiment); });
  }
  status add_event(const experiments::event_row& e) override {
    return with([&](experiment_store& s) { return s.add_event(e); });
  }
  result<std::vector<experiments::event_row>> events(int64_t experiment,
                                                     const std::string& trial) override {
    return with([&](experiment_store& s) { return s.events(experiment, trial); });
  }
  status flush() override {
    return with([&](experiment_store& s) { return s.flush(); });
  }
  status flush_experiments(const std::vector<int64_t>& ids) override {
    return with([&](experiment_store& s) { return s.flush_experiments(ids); });
  }
  std::string where() const override { return where_; }

private:
  template <class F>
  auto with(F f) -> decltype(f(std::declval<experiment_store&>())) {
    auto store = current();
    if (!store)
      return store.error();
    return f(**store);
  }

  cluster& cluster_;
  std::string where_;
  std::mutex mutex_;
  head_actor head_;  // the head client_ was made for
  std::shared_ptr<experiment_store> client_;
};

} // namespace

result<std::shared_ptr<experiments::experiment_store>> cluster::experiments() {
  std::lock_guard<std::mutex> lock(experiments_mutex_);
  if (experiments_)
    return experiments_;
  if (!embedded_) {
    // It follows the head; asked once now, so that a head that does not
    // answer is an error here.
    auto store = std::make_shared<following_store>(*this, "the head " + where_);
    DTRAIN_RETURN_IF_ERROR(store->current().to_status());
    experiments_ = std::move(store);
    return experiments_;
  }
  result<experiments::experiment_service> service{status(error_code::internal, "no reply")};
  {
    caf::scoped_actor self{*system_};
    self->request(head_, std::chrono::seconds(30), experiments_atom::value, session_)
        .receive([&](experiments::experiment_service& s) { service = std::move(s); },
                 [&](caf::error& e) { service = from_caf(e, "experiment store at " + store_path_); });
  }
  if (!service)
    return service.error();
  experiments_ =
      std::make_shared<experiments::service_client>(*system_, *service, session_, store_path_);
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
  self->request(head(), timeout, caf::get_atom::value, a.node, session())
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
  if (head_watch_)
    caf::anon_send_exit(head_watch_, caf::exit_reason::user_shutdown);
  head_watch_ = nullptr;
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
