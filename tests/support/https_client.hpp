#pragma once

#include <cstdint>
#include <string>

#include "support/http_client.hpp"

/// An HTTPS client for the dashboard's TLS tests, on Boost.Beast over Asio
/// SSL: verifies the server's chain against `ca_file` (and that the
/// certificate names 127.0.0.1 when check_host), one GET per connection,
/// the whole exchange bounded by `timeout_s`.
namespace dtrain::testing {

struct https_reply {
  int status = -1;   // -1: no answer
  std::string body;
  std::string error;  // why not, when status is -1 (the handshake's verdict)
};

https_reply https_get(uint16_t port, const std::string& target, const std::string& ca_file,
                      const std::string& token = "", bool check_host = false,
                      int timeout_s = 10);

} // namespace dtrain::testing
