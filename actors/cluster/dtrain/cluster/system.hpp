#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "caf/openssl/all.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/cluster/tls.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::actors {

/// How long a silent peer process may stay silent before the connection
/// is declared dead (heartbeats every 500 ms): $DTRAIN_HANG_TIMEOUT_MS,
/// default 5000 ms. Every process of a cluster must agree on it.
std::chrono::milliseconds hang_timeout();

/// The actor-system configuration every dtrain process uses: the message
/// types, the middleman, and few scheduler threads (blocking work runs on
/// detached actors). No actor type is registered for CAF's remote spawn.
///
/// With an enabled tls_identity it also loads CAF's openssl module with the
/// identity's certificate, key and CA (mutual TLS: peers must present a
/// certificate from that CA). Without one the module is not loaded at all:
/// CAF would otherwise speak anonymous TLS, encrypted but open to anyone.
struct system_config : caf::actor_system_config {
  system_config();
  explicit system_config(const tls_identity& tls);
};

/// Whether `sys` speaks mutual TLS (its config was made with an enabled
/// tls_identity).
bool uses_tls(caf::actor_system& sys);

/// Publishes `h` on bind:port (bind "" or a wildcard: every interface),
/// over TLS when `sys` uses it. The bound port, or CAF's error.
template <class Handle>
caf::expected<uint16_t> publish_actor(caf::actor_system& sys, const Handle& h, uint16_t port,
                                      const std::string& bind);

/// "HOST:PORT" split and checked; errors name the address.
result<std::pair<std::string, uint16_t>> parse_address(const std::string& address);

/// The head at `address` ("HOST:PORT"), retrying until `timeout` passes
/// (or `give_up` says so). Every attempt is bounded: the port is probed
/// with a deadline first, since CAF's own connect has none (minutes
/// against a host that drops packets). Errors name the address and the
/// last reason. Over TLS when `sys` uses it (uses_tls); a TLS handshake
/// that fails is not retried: the error (invalid_argument) explains it
/// with `tls` (tls.hpp, explain_tls_connect_failure).
result<head_actor> connect_head(caf::actor_system& sys, const std::string& address,
                                std::chrono::milliseconds timeout,
                                const std::function<bool()>& give_up = {},
                                const tls_identity& tls = {});

/// On a TLS cluster (tls.enabled()), the exchange of head_actor.hpp's
/// authentication: checks that the head proves role head, then proves
/// this process's role (node: "join", else "attach"). Every request has
/// `timeout`. Errors name the address and the head's reason. Returns the
/// session token the head handed out (head_auth::session), which every
/// later request to the head and its experiment service carries (a node's
/// registration, a driver's cluster::session()); "" without TLS, where
/// nothing is exchanged.
result<std::string> authenticate(caf::actor_system& sys, const head_actor& head, const tls_identity& tls,
                    const std::string& address, std::chrono::milliseconds timeout);

template <class Handle>
caf::expected<uint16_t> publish_actor(caf::actor_system& sys, const Handle& h, uint16_t port,
                                      const std::string& bind) {
  const char* in = bind.empty() || bind == "0.0.0.0" ? nullptr : bind.c_str();
  if (uses_tls(sys))
    return caf::openssl::publish(h, port, in, true);
  return sys.middleman().publish(h, port, in, true);
}

// CAF 0.17.6 starts an outgoing connection's `last_seen` at the clock's
// epoch and sets it only when the peer's first bytes arrive (basp_broker's
// connect handler), so the heartbeat tick that comes first (within
// middleman.heartbeat-interval, 500 ms) drops the new connection as timed
// out (sec::connection_timeout) whenever the peer's handshake takes longer
// than that: a peer on a loaded host, or one paused for a moment. Such a
// failure is tried again, up to connect_attempts in all; a peer that
// refuses or is not there fails at once, and one that stays silent (hung)
// after about connect_attempts heartbeat intervals.
inline constexpr int connect_attempts = 8;

template <class Connect>
auto retry_connection_timeouts(Connect&& connect) {
  auto out = connect();
  for (int i = 1; i < connect_attempts && !out && out.error() == caf::sec::connection_timeout;
       ++i)
    out = connect();
  return out;
}

/// A connection to a published actor, over TLS when `sys` uses it (its
/// false timeouts tried again, above). A failed TLS handshake is final (a
/// refused certificate stays refused): that error comes back as
/// error_code::invalid_argument, with what the diagnostics saw and our
/// identity.
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

} // namespace dtrain::actors
