// What the head and node roles share: where they listen, the file that
// says they do, and the wait for their end.
#include "dtrain/roles/listen.hpp"

#include <chrono>
#include <cstdio>

#include "caf/all.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::roles {

result<std::pair<std::string, std::string>> choose_addresses(const listen_options& o,
                                                             const std::string& head_host,
                                                             const actors::tls_identity& tls) {
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
  DTRAIN_RETURN_IF_ERROR(actors::require_tls_off_loopback(
      tls, net::is_wildcard(bind) ? "0.0.0.0" : bind, "--bind " + bind));
  return std::make_pair(bind, advertise);
}

void write_ready_file(const std::string& path, const std::string& text) {
  if (path.empty())
    return;
  const std::string line = text + "\n";
  if (status s = write_file_atomically(path, line.data(), line.size(), durability::visible); !s)
    std::fprintf(stderr, "dtrain: %s\n", s.message().c_str());
}

bool wait_for_stop(caf::actor_system& sys, const caf::actor_addr& watched, const char* what) {
  caf::scoped_actor self{sys};
  if (watched)
    self->monitor(watched);
  bool down = false;
  while (!stop_requested() && !down)
    self->receive([&](caf::down_msg&) { down = true; },
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
  if (down)
    std::fprintf(stderr, "dtrain: %s is gone\n", what);
  return down;
}

} // namespace dtrain::roles
