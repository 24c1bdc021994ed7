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
#include "dtrain/cluster/errors.hpp"
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

// Where a node stands with the head: its handle and the node's index.
struct membership {
  head_actor head;
  int32_t index = -1;
};

// One try at joining the head at o.address: reaching it within `reach`,
// then each step within `timeout`. Registers the first time (`was` has no
// index), else rejoins, reporting the node's earlier index and the
// replicas it hosts.
result<membership> join_once(caf::actor_system& sys, const node_options& o,
                             const tls_identity& tls, const node_info& info,
                             const node_actor& node, const membership& was,
                             const hosted_table& hosted, std::chrono::milliseconds reach,
                             std::chrono::milliseconds timeout) {
  DTRAIN_ASSIGN_OR_RETURN(auto head, connect_head(sys, o.address, reach, stop_requested, tls));
  DTRAIN_ASSIGN_OR_RETURN(auto session, authenticate(sys, head, tls, o.address, timeout));
  membership out{head, -1};
  status why = status(error_code::unavailable, "no answer from the head at " + o.address);
  auto answered = [&](int32_t i) { out.index = i; };
  auto refused = [&](caf::error& e) {
    why = from_caf(e, "registering with " + o.address);
  };
  caf::scoped_actor self{sys};
  if (was.index < 0)
    self->request(head, timeout, register_atom::value, info, node, session)
        .receive(answered, refused);
  else
    self->request(head, timeout, rejoin_atom::value, info, node, was.index, hosted.list(), session)
        .receive(answered, refused);
  if (out.index < 0)
    return why;
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Joins the head at o.address for the first time: reaching it within
// 10 s, then registering. A registration that gets no answer is asked
// again: eight quick tries (1 s for the answer, 100 ms between them), then
// 2, 4, 8 and 10 s with backoff, until first_join_window has passed; any other
// error ends the join at once. A lost message or a busy head costs a
// second, not the whole join: with the middleman's worker pool on, CAF
// 0.17.6 delivered about one new connection in a hundred without its
// senders for seconds (the head saw process "invalid-node", refused, and
// its answer went nowhere; system.cpp turns the pool off). Registering
// twice is harmless (the head counts a node actor once). The index is -1
// when it cannot join (said on stderr).
constexpr std::chrono::seconds first_join_window{60};
constexpr int quick_join_tries = 8;

membership join_head(caf::actor_system& sys, const node_options& o, const tls_identity& tls,
                     const node_info& info, const node_actor& node, const hosted_table& hosted) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  milliseconds backoff{250};
  int tries = 0;
  for (;;) {
    ++tries;
    // Quick tries first: a lost message is more likely than a head that
    // needs more than a second to answer.
    const bool quick = tries <= quick_join_tries;
    const milliseconds answer =
        quick ? milliseconds(1000)
              : std::min<milliseconds>(seconds(10),
                                       seconds(2) * (1 << std::min(tries - quick_join_tries - 1, 3)));
    auto joined = join_once(sys, o, tls, info, node, {}, hosted, seconds(10), answer);
    if (joined)
      return *joined;
    const bool busy = joined.error().code() == error_code::timeout;
    if (!busy || stop_requested() || steady_clock::now() - start + backoff >= first_join_window) {
      std::fprintf(stderr, "error: %s%s\n", joined.error().message().c_str(),
                   tries > 1 ? (" (" + std::to_string(tries) + " tries over " +
                                std::to_string(static_cast<int>(seconds_since(start))) + " s)")
                                   .c_str()
                             : "");
      return {};
    }
    std::fprintf(stderr, "dtrain node: the head at %s did not answer in time (%s); asking again "
                 "in %lld ms\n", o.address.c_str(), joined.error().message().c_str(),
                 static_cast<long long>(quick ? 100 : backoff.count()));
    std::this_thread::sleep_for(quick ? milliseconds(100) : backoff);
    if (!quick)
      backoff = std::min(backoff * 2, milliseconds(5000));
  }
}


// Tries to join the head again until `deadline`, with backoff from 250 ms
// doubling to 5 s, or until a stop is asked for; counts the tries. The new
// membership, or the last try's error.
result<membership> retry_join(caf::actor_system& sys, const node_options& o,
                              const tls_identity& tls, const node_info& info,
                              const node_actor& node, const membership& was,
                              const hosted_table& hosted,
                              std::chrono::steady_clock::time_point deadline, int& tries) {
  using namespace std::chrono;
  milliseconds backoff{250};
  status last = status(error_code::unavailable, "no try");
  while (!stop_requested() && steady_clock::now() < deadline) {
    const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
    ++tries;
    // A short reach: the backoff paces the tries.
    auto joined = join_once(sys, o, tls, info, node, was, hosted,
                            std::clamp(left, milliseconds(100), milliseconds(500)),
                            std::clamp(left, milliseconds(1000), milliseconds(5000)));
    if (joined)
      return joined;
    last = joined.error();
    std::this_thread::sleep_for(std::min(backoff, duration_cast<milliseconds>(
                                                      deadline - steady_clock::now())));
    backoff = std::min(backoff * 2, milliseconds(5000));
  }
  return last;
}

// The head went away: tries to join it again (retry_join) for
// reconnect_window(o), its replicas running on. The new membership, or one
// without index (said).
membership rejoin_head(caf::actor_system& sys, const node_options& o, const tls_identity& tls,
                       const node_info& info, const node_actor& node, const membership& was,
                       const hosted_table& hosted) {
  const std::chrono::seconds window = reconnect_window(o);
  const auto start = std::chrono::steady_clock::now();
  if (window.count() == 0) {
    std::fprintf(stderr, "dtrain node %d: the head at %s is gone and this node's reconnect "
                 "window is 0 s; shutting down\n", was.index, o.address.c_str());
    return {};
  }
  std::printf("dtrain node %d: lost the head at %s; its %d replicas keep running; trying to "
              "join again for %lld s\n",
              was.index, o.address.c_str(), hosted_replica_count(),
              static_cast<long long>(window.count()));
  std::fflush(stdout);
  int tries = 0;
  auto joined = retry_join(sys, o, tls, info, node, was, hosted, start + window, tries);
  if (joined) {
    std::printf("dtrain node %d joined %s again as node %d after %.1f s (%d tries), with %zu "
                "hosted replicas\n",
                was.index, o.address.c_str(), joined->index, seconds_since(start), tries,
                hosted.list().size());
    std::fflush(stdout);
    return *joined;
  }
  if (!stop_requested())
    std::fprintf(stderr, "dtrain node %d: the head at %s did not take this node back within "
                 "its reconnect window of %lld s (%d tries over %.1f s; the last: %s); shutting "
                 "down\n",
                 was.index, o.address.c_str(), static_cast<long long>(window.count()), tries,
                 seconds_since(start), joined.error().message().c_str());
  return {};
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
// head is gone for longer than the reconnect window (rejoin_head); then
// its replicas stop. The process's exit code.
int serve(caf::actor_system& sys, const node_options& o, const tls_identity& tls,
          const node_actor& node, const hosted_table& hosted, membership joined,
          const node_info& info, uint16_t port) {
  const int32_t index = joined.index;
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
  while (wait_for_stop(sys, joined.head.address(), "the head")) {
    joined = rejoin_head(sys, o, tls, info, node, joined, hosted);
    if (joined.index < 0)
      break;
  }
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

std::chrono::seconds reconnect_window(const node_options& o) {
  if (o.reconnect_window >= 0)
    return std::chrono::seconds(o.reconnect_window);
  if (const char* env = std::getenv("DTRAIN_RECONNECT_WINDOW_S")) {
    char* end = nullptr;
    long s = std::strtol(env, &end, 10);
    if (end != env && *end == 0 && s >= 0)
      return std::chrono::seconds(s);
    std::fprintf(stderr, "dtrain node: DTRAIN_RECONNECT_WINDOW_S='%s' is not a number of "
                 "seconds; using %d\n", env, default_reconnect_window);
  }
  return std::chrono::seconds(default_reconnect_window);
}

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
  auto hosted = std::make_shared<hosted_table>();
  auto node_opts = actor_options(o, *secret, tls);
  node_opts.hosted = hosted;
  auto node = spawn_node(sys, std::move(node_opts));
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
  const membership joined = join_head(sys, o, tls, info, node, *hosted);
  if (joined.index < 0) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  return serve(sys, o, tls, node, *hosted, joined, info, *port);
}

} // namespace dtrain::roles
