// `dtrain start --head` and `dtrain start --address`: the head and node
// processes.
#include "servers.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/cluster/replica_actor.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/plugin/loader.hpp"
#include "processes.hpp"

namespace dtrain::cli {

namespace {

using namespace dtrain::actors;

// The address to listen on and the one to advertise, from --bind,
// --advertise and (for a node) the head's address; anything but loopback
// needs TLS.
result<std::pair<std::string, std::string>> choose_addresses(const server_options& o,
                                                             const std::string& head_host,
                                                             const tls_identity& tls) {
  std::string bind = o.bind;
  if (bind.empty() && (head_host.empty() || net::is_loopback(head_host)))
    bind = "127.0.0.1";
  if (bind.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(bind, net::local_address_towards(head_host, 1));
  }
  if (!net::is_wildcard(bind)) {
    auto usable = net::bindable_ipv4(bind, bind);
    if (!usable)
      return usable.error().with_context("--bind");
    bind = *usable;
  }
  std::string advertise = o.advertise;
  if (advertise.empty() && !net::is_wildcard(bind))
    advertise = bind;
  if (advertise.empty() && head_host.empty())
    advertise = net::host_name();
  if (advertise.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(advertise, net::local_address_towards(head_host, 1));
  }
  if (net::is_loopback(bind) && !net::is_loopback(advertise))
    return invalid_argument("--advertise " + advertise + " with --bind " + bind +
                            ": peers on other hosts cannot reach a loopback listener");
  // A wildcard bind is not loopback either.
  DTRAIN_RETURN_IF_ERROR(require_tls_off_loopback(tls, net::is_wildcard(bind) ? "0.0.0.0" : bind,
                                                  "--bind " + bind));
  return std::make_pair(bind, advertise);
}

// Readers (`dtrain start --detach`, tests) see the whole line or no file.
void write_file(const std::string& path, const std::string& text) {
  if (path.empty())
    return;
  const std::string line = text + "\n";
  if (status s = write_file_atomically(path, line.data(), line.size(), durability::visible); !s)
    std::fprintf(stderr, "dtrain: %s\n", s.message().c_str());
}

// Waits for Ctrl-C / SIGTERM, or for `watched` to go down when given.
void wait_for_stop(caf::actor_system& sys, const caf::actor_addr& watched, const char* what) {
  caf::scoped_actor self{sys};
  if (watched)
    self->monitor(watched);
  bool down = false;
  while (!stop_requested() && !down)
    self->receive([&](caf::down_msg&) { down = true; },
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
  if (down)
    std::fprintf(stderr, "dtrain: %s is gone; shutting down\n", what);
}

} // namespace

int run_head(const server_options& o) {
  if (!o.plugins.empty()) {
    std::fprintf(stderr, "error: --plugin is for nodes (they host the replicas), not the head\n");
    return 2;
  }
  auto tls = load_tls_identity(o.tls, security::role::head);
  if (!tls) {
    std::fprintf(stderr, "error: %s\n", tls.error().message().c_str());
    return 2;
  }
  // The dashboard serves HTTPS with the head's own certificate.
  dashboard_flags dash_flags = o.dashboard;
  if (tls->enabled()) {
    dash_flags.certificate = tls->files.certificate;
    dash_flags.key = tls->files.key;
  }
  if (status s = check_dashboard_flags(dash_flags); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  auto addresses = choose_addresses(o, "", *tls);
  if (!addresses) {
    std::fprintf(stderr, "error: %s\n", addresses.error().message().c_str());
    return 2;
  }
  const auto& [bind, advertise] = *addresses;
  if (tls->enabled())
    enable_tls_diagnostics("dtrain head");
  system_config cfg{*tls};
  caf::actor_system sys{cfg};
  const std::string store =
      o.store_path.empty() ? experiments::default_store_path() : o.store_path;
  // Its session stands for the head's own process (the dashboard below).
  auto [head, session] = spawn_head(sys, experiments::sqlite_opener(store), store, *tls);
  auto port = publish_actor(sys, head, o.port, net::is_wildcard(bind) ? "" : bind);
  if (!port) {
    std::fprintf(stderr, "error: cannot listen on %s:%u: %s\n", bind.c_str(), o.port,
                 caf::to_string(port.error()).c_str());
    caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
    return 1;
  }
  // Before the port file: whoever waits for it finds the dashboard up too.
  auto dash = serve_dashboard(sys, head, session, dash_flags, "dtrain head:");
  if (!dash) {
    std::fprintf(stderr, "error: %s\n", dash.error().message().c_str());
    caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::string role = "head-" + std::to_string(*port);
  (void)write_pid_file(role, advertise + ":" + std::to_string(*port));
  std::printf("dtrain head listening on %s:%u, reachable at %s:%u (pid %d), experiment store %s, "
              "%s\n",
              bind.c_str(), *port, advertise.c_str(), *port, getpid(), store.c_str(),
              tls->enabled() ? ("mutual TLS as '" + tls->subject + "'").c_str()
                             : "plain remoting (loopback only)");
  std::fflush(stdout);
  write_file(o.port_file, advertise + ":" + std::to_string(*port));
  wait_for_stop(sys, caf::actor_addr{}, "");
  std::printf("dtrain head: stopping\n");
  std::fflush(stdout);
  dash->reset();  // its connections and thread end before the head does
  caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
  remove_pid_file(role);
  return 0;
}

int run_node(const server_options& o) {
  if (o.cpus < 0) {
    std::fprintf(stderr, "error: --cpus: %d is not a number of cores (give 1 or more; leave it "
                         "out to share the host's)\n", o.cpus);
    return 2;
  }
  set_cpu_budget(o.cpus);
  if (o.cpus > 0 && o.slots > o.cpus)
    std::fprintf(stderr,
                 "warning: --slots %d is more than --cpus %d: every replica still computes with "
                 "at least one thread, so a full node uses up to %d cores\n",
                 o.slots, o.cpus, o.slots);
  auto gpus = offered_gpus(o.gpus);
  if (!gpus) {
    std::fprintf(stderr, "error: --gpus: %s\n", gpus.error().message().c_str());
    return 2;
  }
  auto hp = parse_address(o.address);
  if (!hp) {
    std::fprintf(stderr, "error: --address: %s\n", hp.error().message().c_str());
    return 2;
  }
  auto tls = load_tls_identity(o.tls, security::role::node);
  if (!tls) {
    std::fprintf(stderr, "error: %s\n", tls.error().message().c_str());
    return 2;
  }
  auto addresses = choose_addresses(o, hp->first, *tls);
  if (!addresses) {
    std::fprintf(stderr, "error: %s\n", addresses.error().message().c_str());
    return 2;
  }
  if (auto s = require_tls_off_loopback(*tls, hp->first, "the head at " + o.address); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  const auto& [bind, advertise] = *addresses;
  // Plugins first: a library that does not load is a startup error.
  for (const auto& path : o.plugins) {
    auto p = plugin::load_plugin(path);
    if (!p) {
      std::fprintf(stderr, "error: --plugin %s: %s\n", path.c_str(), p.error().message().c_str());
      return 2;
    }
    std::string names;
    for (const auto& op : p->operators)
      names += " " + op;
    std::printf("dtrain node: preloaded plugin %s (%s) with operators%s\n", path.c_str(),
                p->hash.c_str(), names.c_str());
  }
  if (tls->enabled())
    enable_tls_diagnostics("dtrain node");
  system_config cfg{*tls};
  caf::actor_system sys{cfg};
  // Drivers of this user prove it with a MAC keyed by the secret in this
  // file (it goes when the node does); drivers of a TLS cluster with a
  // client certificate.
  auto secret = node_secret::create(default_secret_dir(), "node-" + std::to_string(getpid()));
  if (!secret) {
    std::fprintf(stderr, "error: %s\n", secret.error().message().c_str());
    return 1;
  }
  node_options no;
  no.plugin_dir = plugin::default_plugin_dir();
  no.secret = secret->value();
  no.secret_file = secret->path();
  no.identity = node_proof_name(net::host_identity(), static_cast<int32_t>(getpid()));
  if (tls->enabled())
    no.ca_file = tls->files.ca;
  no.log_file = o.log_file;
  auto node = spawn_node(sys, no);
  const char* in = net::is_wildcard(bind) ? nullptr : bind.c_str();
  // Plain: a bare BASP port (drivers reach the node actor, which they get
  // from the head, through it). TLS: the node actor is published, since
  // CAF connects over TLS only to a published actor.
  auto port = tls->enabled() ? publish_actor(sys, node, o.port, in ? bind : "")
                             : sys.middleman().open(o.port, in, true);
  if (!port) {
    std::fprintf(stderr, "error: cannot listen on %s:%u: %s\n", bind.c_str(), o.port,
                 caf::to_string(port.error()).c_str());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  auto reached = connect_head(sys, o.address, std::chrono::seconds(10), stop_requested, *tls);
  result<std::string> joined =
      reached ? authenticate(sys, *reached, *tls, o.address, std::chrono::seconds(10))
              : result<std::string>(reached.error());
  if (!joined) {
    std::fprintf(stderr, "error: %s\n", joined.error().message().c_str());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  head_actor head = *reached;
  node_info info{net::host_name(), advertise + ":" + std::to_string(*port), o.slots,
                 static_cast<int32_t>(gpus->size()), static_cast<int32_t>(getpid()),
                 net::host_identity(), *gpus, secret->path(),
                 o.cpus > 0 ? o.cpus
                            : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()))};
  int32_t index = -1;
  {
    caf::scoped_actor self{sys};
    self->request(head, std::chrono::seconds(10), register_atom::value, info, node, *joined)
        .receive([&](int32_t i) { index = i; },
                 [&](caf::error& e) {
                   std::fprintf(stderr, "error: registering with %s: %s\n", o.address.c_str(),
                                caf::to_string(e).c_str());
                 });
  }
  if (index < 0) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::string role = "node-" + std::to_string(*port);
  (void)write_pid_file(role);
  std::printf("dtrain node %d joined %s: %d CPU slots, %d cpus%s, %d GPUs, replicas spawn on "
              "%s:%u (pid %d), log %s\n",
              index, o.address.c_str(), o.slots, info.cpus, o.cpus > 0 ? "" : " (the host's)",
              info.gpus, advertise.c_str(), *port, getpid(),
              o.log_file.empty() ? "none" : o.log_file.c_str());
  std::fflush(stdout);
  write_file(o.port_file, advertise + ":" + std::to_string(*port));
  wait_for_stop(sys, head.address(), "the head");
  int running = stop_hosted_replicas();
  std::printf("dtrain node: stopping (%d replicas stopped)\n", running);
  std::fflush(stdout);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  // Let the replicas' workers leave before the actor system goes; one stuck
  // in a call that cannot be interrupted must not keep the node alive.
  for (int i = 0; i < 150 && live_replica_workers() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  remove_pid_file(role);
  if (live_replica_workers() > 0) {
    std::fprintf(stderr, "dtrain node: %d replica workers did not stop within 3 s; exiting anyway\n",
                 live_replica_workers());
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

} // namespace dtrain::cli
