#pragma once

#include <cstdint>
#include <string>

/// A minimal HTTP/1.1 client for the dashboard's tests: raw sockets, one
/// request per connection, every socket call bounded.
namespace dtrain::testing {

struct http_reply {
  int status = -1;  // -1: no answer (refused, reset, timed out)
  std::string headers;
  std::string body;
};

/// `method target` to 127.0.0.1:port with `Connection: close`, a bearer
/// token when given, and `extra` header lines ("Name: value\r\n...") as
/// they are; each socket call waits at most `timeout_s` seconds.
http_reply http_request_to(uint16_t port, const std::string& method, const std::string& target,
                           const std::string& token = "", const std::string& extra = "",
                           int timeout_s = 10);

inline http_reply http_get(uint16_t port, const std::string& target,
                           const std::string& token = "") {
  return http_request_to(port, "GET", target, token);
}

} // namespace dtrain::testing
