#include "support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>

namespace dtrain::testing {

http_reply http_request_to(uint16_t port, const std::string& method, const std::string& target,
                           const std::string& token, const std::string& extra, int timeout_s) {
  http_reply out;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return out;
  timeval tv{timeout_s, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return out;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty())
    req += "Authorization: Bearer " + token + "\r\n";
  req += extra + "\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return out;
  }
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nBODY": the server sends Content-Length
  // and closes, so the body is the rest.
  if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || raw.size() < 12)
    return out;
  out.status = std::atoi(raw.substr(9, 3).c_str());
  const size_t end = raw.find("\r\n\r\n");
  out.headers = raw.substr(0, end);
  out.body = end == std::string::npos ? "" : raw.substr(end + 4);
  return out;
}

} // namespace dtrain::testing
