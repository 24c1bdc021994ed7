#pragma once

#include <string>

#include "dtrain/core/status.hpp"

/// The IPv4 addresses communicators bind their sockets to. Stateless,
/// thread-safe; they read the host's interfaces and resolver, never block
/// on the network.
namespace dtrain::comm {

/// The address to bind for `requested`: itself, unless it is "" or "auto",
/// which pick the first IPv4 address of a network interface that is up and
/// not loopback (127.0.0.1 when there is none). Callers that know the
/// address peers reach this host by should pass it instead.
std::string resolve_bind_address(const std::string& requested);

/// The numeric IPv4 address `name` resolves to, when a socket can bind
/// there (it belongs to this machine). Else io_error naming `as_given` (what
/// the user wrote), the address it resolved to, and why: it does not
/// resolve, or "the address does not belong to this machine".
result<std::string> bindable_ipv4(const std::string& name, const std::string& as_given);

} // namespace dtrain::comm
