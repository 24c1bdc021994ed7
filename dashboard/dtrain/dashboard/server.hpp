#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/dashboard/http.hpp"

namespace dtrain::dashboard {

/// An HTTP/1.1 server on Boost.Beast: one I/O thread, owned by the server,
/// runs every connection asynchronously (no thread per connection), and a
/// pool of `workers` threads, owned too, runs the handler.
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
/// max_connections are open at once, further ones are closed on accept
/// without an answer. An accept that fails for want of a resource (EMFILE,
/// ENFILE, ENOBUFS, ENOMEM) is tried again after accept_retry, not at once;
/// one that fails for any other reason (a connection reset or a network
/// error before it was accepted) costs only that connection, and the next
/// is accepted at once.
///
/// Handlers: `quick`, when given, runs first on the I/O thread and must not
/// block (the page's files); when it declines (nullopt), `handle` runs on
/// one of the workers, so a handler that blocks (the dashboard's routes ask
/// the head, each request bounded by its timeout) holds up only its own
/// connection, while `workers` others answer. The answer goes back to the
/// connection on the I/O thread. `handle` is called from several threads
/// at once and must be thread-safe; an exception from either answers 500.
/// A connection waiting for its handler has no timeout running: the
/// handler's own bounds apply. Listening where the caller says: the
/// address policy (loopback only) is the caller's (dashboard.hpp).
///
/// stop() (and the destructor) closes every connection, abandons requests
/// whose handler has not started, waits for the handlers running (bounded
/// by their own timeouts) and joins the I/O thread and the workers; an
/// answer finished after stop() is dropped, and after stop() returns the
/// handlers are never called again. stop() may be called from several
/// threads at once (each returns once all is joined), and more than once.
/// Called from a handler or the I/O thread, it only starts the stop and
/// returns at once (a thread cannot join itself): the owner's stop() or
/// destructor joins. Destroying the server from a handler or the I/O
/// thread is a broken invariant (aborts). port() and tls() from any thread.
class http_server {
public:
  struct options {
    std::string bind = "127.0.0.1";  // an IPv4 or IPv6 literal
    uint16_t port = 0;               // 0: any free port
    std::chrono::milliseconds timeout{30000};
    size_t max_header_bytes = 8 * 1024;
    size_t max_body_bytes = 64 * 1024;
    int max_connections = 64;
    int workers = 2;  // threads running `handle` (at least 1)
    std::chrono::milliseconds accept_retry{100};
    std::string certificate;  // PEM chain, leaf first; with `key`: HTTPS
    std::string key;          // PEM private key of `certificate`
  };
  using handler = std::function<http_response(const http_request&)>;
  /// An answer without blocking, or nullopt: `handle` answers instead.
  using quick_handler = std::function<std::optional<http_response>(const http_request&)>;

  /// Listens and starts the I/O thread and the workers. Errors (io_error)
  /// name the address and the OS's reason, or the certificate or key file
  /// that cannot be used and OpenSSL's reason; invalid_argument a bind that
  /// is not an IP address, or workers < 1.
  static result<std::unique_ptr<http_server>> start(const options& o, handler h,
                                                    quick_handler quick = {});
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
