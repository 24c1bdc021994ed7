#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "dtrain/core/status.hpp"

/// Facts about this host and its network, each looked up in one place:
/// its name, an identity that tells two machines apart even when they were
/// cloned (same host name), the local address that routes to a peer, and a
/// TCP reachability probe with a deadline (CAF's connect has none).
namespace dtrain::net {

/// gethostname(), or "localhost" if it fails or is empty: the one place
/// dtrain reads the host's name (node names, experiment owners "host pid",
/// trainer ids, certificate names).
std::string host_name();

/// What ranks compare to decide whether they share a machine (shared
/// memory) or must talk over the network: the host name, the kernel's boot
/// id and this process's network namespace. Cloned machines share a name
/// but not a boot id; network namespaces on one kernel (the multi-host test
/// bed) are different hosts. Stable for the life of the process.
std::string host_identity();

/// True for a numeric IPv4 address in 127.0.0.0/8 (four dotted parts, as
/// inet_pton reads them), the IPv6 address ::1 and the name "localhost";
/// false for everything else, including other names that resolve to
/// loopback and names that only begin like one ("127.example.net").
bool is_loopback(const std::string& address);

/// True for "", "0.0.0.0", "::" and "*": listen on every interface.
bool is_wildcard(const std::string& address);

/// The numeric IPv4 address of `host` (itself when already numeric);
/// invalid_argument naming the host when it does not resolve.
result<std::string> resolve_ipv4(const std::string& host);

/// The local IPv4 address the kernel would use to reach host:port (a UDP
/// socket "connected" there; no packet is sent). Errors name the peer.
result<std::string> local_address_towards(const std::string& host, uint16_t port);

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

/// Opens and closes a TCP connection to host:port within `timeout`:
/// ok, or timeout/unavailable naming the address and what happened
/// (refused, no route, no answer within N ms).
status probe_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

} // namespace dtrain::net
