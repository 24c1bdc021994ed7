#pragma once

#include <functional>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/launch/environment.hpp"

namespace dtrain::launch {

/// How this host reaches the network, as choose_head_address asks it
/// (net:: functions in `dtrain launch`, fixed answers in tests).
struct host_network {
  /// The local IPv4 address that routes towards `peer` (a host name of the
  /// job), or an error when it does not resolve or has no route.
  std::function<result<std::string>(const std::string& peer)> address_towards;
  /// An address of an interface that is up and not loopback; a loopback
  /// address when there is none.
  std::function<std::string()> any_interface;
};

/// The IPv4 address every task of a launched job connects to, and the head
/// binds, given `resolved`: what the head's host name (env.head_host)
/// resolves to on this host, or DTRAIN_HEAD_ADDR when `overridden`.
///
/// A non-loopback address is used as it is. A loopback one is what a stock
/// Debian /etc/hosts gives for the host's own name (127.0.1.1): for a job on
/// one host the head is at 127.0.0.1; for a job over several hosts the
/// other hosts could not reach it there, so the head's host takes the
/// address of its interface that routes towards the job's second host
/// (Slurm), else of its first interface that is not loopback (torchrun names
/// no other host); the same on every task of that host, so all agree.
/// Errors (invalid_argument) say why a loopback address cannot serve: on
/// another host than the head's (the head's name resolves to this host's
/// loopback: /etc/hosts or DNS is wrong here), an explicit DTRAIN_HEAD_ADDR
/// that is loopback, or a head host without any other address. Pure but
/// for `net`'s calls; never blocks beyond them.
result<std::string> choose_head_address(const launch_env& env, const std::string& resolved,
                                        bool overridden, const host_network& net);

} // namespace dtrain::launch
