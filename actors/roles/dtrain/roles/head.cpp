// The head role: `dtrain start --head`, or a program of the user's.
#include "dtrain/roles/head.hpp"

#include <unistd.h>

#include <cstdio>

#include "caf/all.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/system.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/dashboard/dashboard.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::roles {

namespace {

using namespace dtrain::actors;

int refuse(const status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 2;
}

// The dashboard serves HTTPS with the head's own certificate.
dashboard_flags dashboard_of(const head_options& o, const tls_identity& tls) {
  dashboard_flags d = o.dashboard;
  if (tls.enabled()) {
    d.certificate = tls.files.certificate;
    d.key = tls.files.key;
  }
  return d;
}

} // namespace

int run_head(const head_options& o) {
  auto tls = load_tls_identity(o.tls, security::role::head);
  if (!tls)
    return refuse(tls.error());
  const dashboard_flags dash_flags = dashboard_of(o, *tls);
  if (status s = check_dashboard_flags(dash_flags); !s)
    return refuse(s);
  auto addresses = choose_addresses(o, "", *tls);
  if (!addresses)
    return refuse(addresses.error());
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
  const std::string reached = advertise + ":" + std::to_string(*port);
  const std::string role = "head-" + std::to_string(*port);
  if (status s = write_pid_file(role, reached); !s)
    std::fprintf(stderr, "dtrain head: %s (`dtrain stop` and commands without --address will "
                         "not find this head)\n", s.message().c_str());
  std::printf("dtrain head listening on %s:%u, reachable at %s (pid %d), experiment store %s, "
              "%s\n",
              bind.c_str(), *port, reached.c_str(), getpid(), store.c_str(),
              tls->enabled() ? ("mutual TLS as '" + tls->subject + "'").c_str()
                             : "plain remoting (loopback only)");
  std::fflush(stdout);
  write_ready_file(o.port_file, reached);
  wait_for_stop(sys, caf::actor_addr{}, "");
  std::printf("dtrain head: stopping\n");
  std::fflush(stdout);
  dash->reset();  // its connections and thread end before the head does
  caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
  remove_pid_file(role);
  return 0;
}

} // namespace dtrain::roles
