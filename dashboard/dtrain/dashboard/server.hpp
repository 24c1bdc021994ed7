#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/dashboard/http.hpp"

namespace dtrain::dashboard {

/// An HTTP/1.1 server on Boost.Beast: one I/O thread, owned by the server,
/// runs every connection asynchronously (no thread per connection).
///
/// HTTPS when options.certificate and options.key are given (PEM files;
/// Asio SSL over OpenSSL 3, TLS 1.2 or later, no client certificate asked):
/// every connection must complete a TLS handshake within `timeout`, else it
/// is closed; a client speaking plain HTTP to it gets no answer.
///
/// Limits: a request's header may be max_header_bytes and its body
/// max_body_bytes (431 / 413 and the connection closed otherwise); each
/// read and write of a connection must finish within `timeout`, else the
/// connection is closed (an idle keep-alive connection too); at most
/// max_connections are open at once, further ones are closed on accept.
///
/// The handler runs on the I/O thread, one request at a time, so it must
/// be quick or bounded (the dashboard's routes ask the head with a
/// timeout); an exception from it answers 500. Listening where the caller
/// says: the address policy (loopback only) is the caller's (dashboard.hpp).
///
/// stop() (and the destructor) closes every connection and joins the I/O
/// thread; after it the handler is never called again. Thread-safe: port()
/// from any thread, stop() from any thread but the I/O thread.
class http_server {
public:
  struct options {
    std::string bind = "127.0.0.1";  // an IPv4 or IPv6 literal
    uint16_t port = 0;               // 0: any free port
    std::chrono::milliseconds timeout{30000};
    size_t max_header_bytes = 8 * 1024;
    size_t max_body_bytes = 64 * 1024;
    int max_connections = 64;
    std::string certificate;  // PEM chain, leaf first; with `key`: HTTPS
    std::string key;          // PEM private key of `certificate`
  };
  using handler = std::function<http_response(const http_request&)>;

  /// Listens and starts the I/O thread. Errors (io_error) name the address
  /// and the OS's reason, or the certificate or key file that cannot be
  /// used and OpenSSL's reason.
  static result<std::unique_ptr<http_server>> start(const options& o, handler h);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  uint16_t port() const;
  bool tls() const;
  void stop();

private:
  struct impl;
  explicit http_server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace dtrain::dashboard
