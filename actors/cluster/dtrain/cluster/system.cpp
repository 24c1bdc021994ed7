#include "dtrain/cluster/system.hpp"

#include <cstdlib>

#include "dtrain/cluster/experiment_protocol.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"

namespace dtrain::actors {

system_config::system_config() : system_config(tls_identity{}) {}

system_config::system_config(const tls_identity& tls) {
  // No add_actor_type: nothing is remotely spawnable by a peer (CAF's
  // remote spawn checks nobody); replicas start through the node actor's
  // spawn, which checks the driver's credential (node_actor.hpp).
  register_types(*this);
  set("scheduler.max-threads", 2);
  // Workers that sleep on a condition variable until there is work, instead
  // of work stealing's polling (a wake-up every 10 ms per idle worker, and
  // 25 ms of 50 us sleeps after each job): an idle node process costs the
  // host ~1% of a core that way, 128 of them more than this 2-core machine
  // has, and a head with many peers never stops polling (the scale
  // harness, docs/scale.md). Latency is lower too (notes/caf-0.17.md 7.2).
  set("scheduler.policy", caf::atom("sharing"));
  // Heartbeats find hung peers (a stopped process keeps its sockets open).
  // Both settings must be the same in every process of a cluster.
  set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(500)});
  set("middleman.connection-timeout", caf::timespan{hang_timeout()});
  // Messages from peers are read on the middleman's own thread, not handed
  // to its worker pool: with the pool, CAF 0.17.6 delivered about one new
  // connection in a hundred without its senders for seconds (the head saw
  // a registration from process "invalid-node" and its answer went
  // nowhere). Without it: none in 800 joins (the scale harness,
  // docs/scale.md).
  set("middleman.workers", size_t{0});
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

} // namespace dtrain::actors
