#include "dtrain/launch/head_address.hpp"

#include "dtrain/core/net.hpp"

namespace dtrain::launch {

namespace {

std::string hosts_of(const launch_env& env) {
  return std::to_string(env.nodes) + " hosts";
}

// The head's host in a job over several hosts: the address the others
// route to, or an error saying why there is none.
result<std::string> address_for_peers(const launch_env& env, const std::string& resolved,
                                      const host_network& net) {
  std::string why_not;
  if (env.hosts.size() > 1) {
    auto towards = net.address_towards(env.hosts[1]);
    if (towards && !net::is_loopback(*towards))
      return *towards;
    why_not = towards ? "the route towards " + env.hosts[1] + " leaves from " + *towards
                      : towards.error().message();
  }
  const std::string any = net.any_interface();
  if (!net::is_loopback(any))
    return any;
  return invalid_argument(
      "the head's host " + env.head_host + " resolves to " + resolved +
      " (loopback, as a stock Debian /etc/hosts maps the host's own name), and this host has no "
      "other address" + (why_not.empty() ? std::string() : " (" + why_not + ")") +
      ": the job spans " + hosts_of(env) + " and tasks on the others could not reach a head "
      "there; set DTRAIN_HEAD_ADDR to an address of this host they reach");
}

} // namespace

result<std::string> choose_head_address(const launch_env& env, const std::string& resolved,
                                        bool overridden, const host_network& net) {
  if (!net::is_loopback(resolved))
    return resolved;
  if (env.nodes <= 1)
    return std::string("127.0.0.1");  // one host: loopback reaches every task
  if (overridden)
    return invalid_argument("DTRAIN_HEAD_ADDR is " + resolved + ", a loopback address, but the "
                            "job spans " + hosts_of(env) + ": tasks on the other hosts could not "
                            "reach the head there; give an address of the head's host they reach");
  if (env.node_rank != 0)
    return invalid_argument(
        "the head's host " + env.head_host + " resolves to " + resolved + " (loopback) here, on "
        "node " + std::to_string(env.node_rank) + " of a job over " + hosts_of(env) +
        ": the head runs on another host, which no loopback address reaches; fix the entry for " +
        env.head_host + " in this host's /etc/hosts or DNS, or set DTRAIN_HEAD_ADDR to the head's "
        "address");
  return address_for_peers(env, resolved, net);
}

} // namespace dtrain::launch
