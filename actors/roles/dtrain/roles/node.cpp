// The node role: `dtrain start --address HEAD`, or a program of the user's
// (apps/examples/my_node.cpp). Only the cluster side: no driver header.
#include "dtrain/roles/node.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "caf/all.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/cluster/replica_actor.hpp"
#include "dtrain/cluster/system.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/plugin/loader.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::roles {

namespace {

using namespace dtrain::actors;

// What a node starts from, checked before anything listens.
struct node_plan {
  std::string head_host;
  std::vector<int32_t> gpus;
  tls_identity tls;
  std::string bind, advertise;
};

result<node_plan> plan_node(const node_options& o) {
  if (o.cpus < 0)
    return invalid_argument("--cpus: " + std::to_string(o.cpus) + " is not a number of cores "
                            "(give 1 or more; leave it out to share the host's)");
  node_plan p;
  auto gpus = offered_gpus(o.gpus);
  if (!gpus)
    return gpus.error().with_context("--gpus");
  p.gpus = *gpus;
  auto hp = parse_address(o.address);
  if (!hp)
    return hp.error().with_context("--address");
  p.head_host = hp->first;
  DTRAIN_ASSIGN_OR_RETURN(p.tls, load_tls_identity(o.tls, security::role::node));
  DTRAIN_ASSIGN_OR_RETURN(auto addresses, choose_addresses(o, p.head_host, p.tls));
  DTRAIN_RETURN_IF_ERROR(require_tls_off_loopback(p.tls, p.head_host, "the head at " + o.address));
  std::tie(p.bind, p.advertise) = addresses;
  return p;
}

// Plugins first: a library that does not load is a startup error.
status preload_plugins(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    auto p = plugin::load_plugin(path);
    if (!p)
      return p.error().with_context("--plugin " + path);
    std::string names;
    for (const auto& op : p->operators)
      names += " " + op;
    std::printf("dtrain node: preloaded plugin %s (%s) with operators%s\n", path.c_str(),
                p->hash.c_str(), names.c_str());
  }
  return status::ok();
}

actors::node_options actor_options(const node_options& o, const node_secret& secret,
                                   const tls_identity& tls) {
  actors::node_options no;
  no.plugin_dir = plugin::default_plugin_dir();
  no.secret = secret.value();
  no.secret_file = secret.path();
  no.identity = node_proof_name(net::host_identity(), static_cast<int32_t>(getpid()));
  if (tls.enabled())
    no.ca_file = tls.files.ca;
  no.log_file = o.log_file;
  return no;
}

// Joins the head at o.address: its index there, or -1 (said on stderr).
int32_t join_head(caf::actor_system& sys, const node_options& o, const tls_identity& tls,
                  const node_info& info, const node_actor& node, head_actor& head) {
  auto reached = connect_head(sys, o.address, std::chrono::seconds(10), stop_requested, tls);
  result<std::string> joined =
      reached ? authenticate(sys, *reached, tls, o.address, std::chrono::seconds(10))
              : result<std::string>(reached.error());
  if (!joined) {
    std::fprintf(stderr, "error: %s\n", joined.error().message().c_str());
    return -1;
  }
  head = *reached;
  int32_t index = -1;
  caf::scoped_actor self{sys};
  self->request(head, std::chrono::seconds(10), register_atom::value, info, node, *joined)
      .receive([&](int32_t i) { index = i; },
               [&](caf::error& e) {
                 std::fprintf(stderr, "error: registering with %s: %s\n", o.address.c_str(),
                              caf::to_string(e).c_str());
               });
  return index;
}

// After a stop: the replicas' workers leave before the actor system goes;
// one stuck in a call that cannot be interrupted must not keep the node
// alive.
void stop_replicas(const node_actor& node) {
  int running = stop_hosted_replicas();
  std::printf("dtrain node: stopping (%d replicas stopped)\n", running);
  std::fflush(stdout);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  for (int i = 0; i < 150 && live_replica_workers() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void apply_cpu_budget(const node_options& o) {
  set_cpu_budget(o.cpus);
  if (o.cpus > 0 && o.slots > o.cpus)
    std::fprintf(stderr,
                 "warning: --slots %d is more than --cpus %d: every replica still computes with "
                 "at least one thread, so a full node uses up to %d cores\n",
                 o.slots, o.cpus, o.slots);
}

// Plain: a bare BASP port (drivers reach the node actor, which they get
// from the head, through it). TLS: the node actor is published, since CAF
// connects over TLS only to a published actor.
caf::expected<uint16_t> open_port(caf::actor_system& sys, const node_actor& node,
                                  const std::string& bind, uint16_t port, bool tls) {
  const char* in = net::is_wildcard(bind) ? nullptr : bind.c_str();
  return tls ? publish_actor(sys, node, port, in ? bind : "")
             : sys.middleman().open(port, in, true);
}

// A node that joined: recorded and announced, until it is stopped or the
// head goes; then its replicas stop. The process's exit code.
int serve(caf::actor_system& sys, const node_options& o, const node_actor& node,
          const head_actor& head, const node_info& info, int32_t index, uint16_t port) {
  const std::string role = "node-" + std::to_string(port);
  if (status s = write_pid_file(role); !s)
    std::fprintf(stderr, "dtrain node: %s (`dtrain stop` will not find this node)\n",
                 s.message().c_str());
  std::printf("dtrain node %d joined %s: %d CPU slots, %d cpus%s, %d GPUs, replicas spawn on "
              "%s (pid %d), log %s\n",
              index, o.address.c_str(), o.slots, info.cpus, o.cpus > 0 ? "" : " (the host's)",
              info.gpus, info.address.c_str(), getpid(),
              o.log_file.empty() ? "none" : o.log_file.c_str());
  std::fflush(stdout);
  write_ready_file(o.port_file, info.address);
  wait_for_stop(sys, head.address(), "the head");
  stop_replicas(node);
  remove_pid_file(role);
  if (live_replica_workers() > 0) {
    std::fprintf(stderr, "dtrain node: %d replica workers did not stop within 3 s; exiting anyway\n",
                 live_replica_workers());
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

} // namespace

int run_node(const node_options& o) {
  auto plan = plan_node(o);
  if (status s = plan ? preload_plugins(o.plugins) : plan.error(); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 2;
  }
  apply_cpu_budget(o);
  const tls_identity& tls = plan->tls;
  if (tls.enabled())
    enable_tls_diagnostics("dtrain node");
  system_config cfg{tls};
  caf::actor_system sys{cfg};
  // Drivers of this user prove it with a MAC keyed by the secret in this
  // file (it goes when the node does); drivers of a TLS cluster with a
  // client certificate.
  auto secret = node_secret::create(default_secret_dir(), "node-" + std::to_string(getpid()));
  if (!secret) {
    std::fprintf(stderr, "error: %s\n", secret.error().message().c_str());
    return 1;
  }
  auto node = spawn_node(sys, actor_options(o, *secret, tls));
  auto port = open_port(sys, node, plan->bind, o.port, tls.enabled());
  if (!port) {
    std::fprintf(stderr, "error: cannot listen on %s:%u: %s\n", plan->bind.c_str(), o.port,
                 caf::to_string(port.error()).c_str());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  const std::string reached = plan->advertise + ":" + std::to_string(*port);
  const int32_t cpus =
      o.cpus > 0 ? o.cpus : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  node_info info{net::host_name(), reached, o.slots, static_cast<int32_t>(plan->gpus.size()),
                 static_cast<int32_t>(getpid()), net::host_identity(), plan->gpus,
                 secret->path(), cpus};
  head_actor head;
  const int32_t index = join_head(sys, o, tls, info, node, head);
  if (index < 0) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  return serve(sys, o, node, head, info, index, *port);
}

} // namespace dtrain::roles
