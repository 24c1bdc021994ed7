#include "dtrain/comm/address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dtrain::comm {

namespace {

std::string numeric(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
  return text;
}

result<sockaddr_in> resolve_ipv4(const std::string& name) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr)
    return io_error(rc != 0 ? gai_strerror(rc) : "no IPv4 address");
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr, sizeof address);
  freeaddrinfo(found);
  return address;
}

// ok when a socket can bind to `address` (any port) on this machine.
status try_bind(const sockaddr_in& address) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return io_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in probe = address;
  probe.sin_port = 0;
  int rc = bind(fd, reinterpret_cast<const sockaddr*>(&probe), sizeof probe);
  int error = errno;
  close(fd);
  if (rc == 0)
    return status::ok();
  if (error == EADDRNOTAVAIL)
    return io_error("the address does not belong to this machine (" +
                    std::string(std::strerror(error)) + ")");
  return io_error(std::strerror(error));
}

} // namespace

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
  auto address = resolve_ipv4(name);
  if (!address)
    return io_error(who + ": " + address.error().message());
  const std::string ip = numeric(*address);
  if (ip != name)
    who += " (" + ip + ")";
  if (auto usable = try_bind(*address); !usable)
    return io_error(who + ": " + usable.message());
  return ip;
}

} // namespace dtrain::comm
