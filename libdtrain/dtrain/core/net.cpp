#include "dtrain/core/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtrain/core/check.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace dtrain::net {

namespace {

// Closes a descriptor when it goes out of scope.
struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

result<sockaddr_in> ipv4_endpoint(const std::string& host, uint16_t port) {
  DTRAIN_ASSIGN_OR_RETURN(std::string ip, resolve_ipv4(host));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
  return sa;
}

std::string numeric(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
  return text;
}

// ok when a socket can bind to `address` (any port) on this machine.
status try_bind(const sockaddr_in& address) {
  fd_guard s{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return io_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in probe = address;
  probe.sin_port = 0;
  int rc = bind(s.fd, reinterpret_cast<const sockaddr*>(&probe), sizeof probe);
  int error = errno;
  if (rc == 0)
    return status::ok();
  if (error == EADDRNOTAVAIL)
    return io_error("the address does not belong to this machine (" +
                    std::string(std::strerror(error)) + ")");
  return io_error(std::strerror(error));
}

} // namespace

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == 0)
    return "localhost";
  return name;
}

std::string host_identity() {
  static const std::string identity = [] {
    std::string boot = first_line("/proc/sys/kernel/random/boot_id");
    struct stat ns {};
    std::string net = stat("/proc/self/ns/net", &ns) == 0 ? std::to_string(ns.st_ino) : "?";
    return host_name() + "/" + boot.substr(0, 8) + "/" + net;
  }();
  return identity;
}

bool is_loopback(const std::string& address) {
  // Literals only (and the one name every resolver maps to loopback): a
  // name that merely begins like an address ("127.example.net") can
  // resolve anywhere, and this answer lifts the TLS requirement.
  if (address == "localhost")
    return true;
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

bool is_wildcard(const std::string& address) {
  return address.empty() || address == "0.0.0.0" || address == "::" || address == "*";
}

result<std::string> resolve_ipv4(const std::string& host) {
  in_addr parsed{};
  if (inet_pton(AF_INET, host.c_str(), &parsed) == 1)
    return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr)
    return invalid_argument("host '" + host + "' does not resolve to an IPv4 address (" +
                            gai_strerror(rc) + ")");
  std::string text = numeric(*reinterpret_cast<sockaddr_in*>(found->ai_addr));
  freeaddrinfo(found);
  return text;
}

result<std::string> local_address_towards(const std::string& host, uint16_t port) {
  DTRAIN_ASSIGN_OR_RETURN(sockaddr_in peer, ipv4_endpoint(host, port));
  fd_guard s{::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0)
    return status(error_code::unavailable, "no route from this host to " + host + ":" +
                                               std::to_string(port) + " (" +
                                               std::strerror(errno) + ")");
  sockaddr_in mine{};
  socklen_t len = sizeof mine;
  getsockname(s.fd, reinterpret_cast<sockaddr*>(&mine), &len);
  return numeric(mine);
}

std::string resolve_bind_address(const std::string& requested) {
  if (!requested.empty() && requested != "auto")
    return requested;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0)
    return "127.0.0.1";
  std::string chosen = "127.0.0.1";
  for (ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET)
      continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0)
      continue;
    sockaddr_in address{};
    std::memcpy(&address, i->ifa_addr, sizeof address);
    chosen = numeric(address);
    break;
  }
  freeifaddrs(all);
  return chosen;
}

result<std::string> bindable_ipv4(const std::string& name, const std::string& as_given) {
  std::string who = "cannot bind to '" + as_given + "'";
  if (name != as_given)
    who += " (" + name + ")";
  auto address = ipv4_endpoint(name, 0);
  if (!address)
    return io_error(who + ": " + address.error().message());
  const std::string ip = numeric(*address);
  if (ip != name)
    who += " (" + ip + ")";
  if (auto usable = try_bind(*address); !usable)
    return io_error(who + ": " + usable.message());
  return ip;
}

status probe_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  DTRAIN_ASSIGN_OR_RETURN(sockaddr_in peer, ipv4_endpoint(host, port));
  fd_guard s{::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (s.fd < 0)
    return status(error_code::unavailable, "socket for " + where + ": " + std::strerror(errno));
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) == 0)
    return status::ok();
  if (errno != EINPROGRESS)
    return status(error_code::unavailable, "cannot connect to " + where + ": " + std::strerror(errno));
  pollfd p{s.fd, POLLOUT, 0};
  int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready == 0)
    return status(error_code::timeout, "no answer from " + where + " within " +
                                           std::to_string(timeout.count()) +
                                           " ms (host down, or packets dropped on the way)");
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (ready < 0 || err != 0)
    return status(error_code::unavailable, "cannot connect to " + where + ": " +
                                               std::strerror(ready < 0 ? errno : err));
  return status::ok();
}

} // namespace dtrain::net
