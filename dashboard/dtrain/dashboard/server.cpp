#include "dtrain/dashboard/server.hpp"

#include "dtrain/core/check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace dtrain::dashboard {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// What stop() needs of a session, whatever its stream.
class session {
public:
  virtual ~session() = default;
  virtual void close() = 0;
};

// What every session shares with the server; outlives both.
struct shared_state {
  http_server::options options;
  http_server::handler handle;
  std::atomic<int> sessions{0};
  // The open sessions, so that stop() can close them (I/O thread only).
  std::vector<std::weak_ptr<session>> live;
};

http_response answer(const std::shared_ptr<shared_state>& st, const http_request& r) {
  try {
    return st->handle(r);
  } catch (const std::exception& e) {
    return {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n", {}};
  } catch (...) {
    return {500, "text/plain; charset=utf-8", "internal error\n", {}};
  }
}

// One connection: read a request, answer it, again while the client keeps
// the connection alive. Every step carries the timeout.
// Stream: beast::tcp_stream (HTTP) or beast::ssl_stream over one (HTTPS),
// which first completes the server side of the TLS handshake. Closing
// skips TLS's close_notify: the dashboard's clients (browsers, scrapers)
// do not need it, and a peer that is gone would make it wait.
template <class Stream>
class http_session final : public session,
                           public std::enable_shared_from_this<http_session<Stream>> {
public:
  template <class... Args>
  http_session(std::shared_ptr<shared_state> st, tcp::socket s, Args&... args)
    : stream_(std::move(s), args...), state_(std::move(st)) {
    ++state_->sessions;
  }
  ~http_session() override { --state_->sessions; }

  void run() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      read();
    } else {
      lowest().expires_after(state_->options.timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec)
                                  return self->close();  // not TLS, or a refused handshake
                                self->read();
                              });
    }
  }

  void close() override {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
  }

private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
    parser_->body_limit(state_->options.max_body_bytes);
    lowest().expires_after(state_->options.timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&http_session::on_read, this->shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::header_limit)
      return refuse(431, "request header too large\n");
    if (ec == http::error::body_limit)
      return refuse(413, "request body too large\n");
    if (ec)
      return close();  // end of stream, timeout, reset
    const auto& req = parser_->get();
    http_request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    if (auto it = req.find(http::field::authorization); it != req.end())
      r.authorization = std::string(it->value());
    write(answer(state_, r), req.version(), req.keep_alive());
  }

  void refuse(int code, const char* why) {
    write({code, "text/plain; charset=utf-8", why, {}}, 11, false);
  }

  void write(const http_response& out, unsigned version, bool keep_alive) {
    response_ = {};
    response_.version(version);
    response_.result(static_cast<http::status>(out.status));
    response_.set(http::field::server, "dtrain");
    response_.set(http::field::content_type, out.content_type);
    response_.set(http::field::cache_control, "no-store");
    // The page's address may carry ?token=: never send it on as a referrer.
    response_.set("Referrer-Policy", "no-referrer");
    response_.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : out.headers)
      response_.set(k, v);
    response_.keep_alive(keep_alive);
    response_.body() = out.body;
    response_.prepare_payload();
    lowest().expires_after(state_->options.timeout);
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&http_session::on_write, this->shared_from_this(),
                                                response_.need_eof()));
  }

  void on_write(bool last, beast::error_code ec, std::size_t) {
    if (ec)
      return close();
    if (last)
      return close();
    read();
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::shared_ptr<shared_state> state_;
};

} // namespace

namespace {

// A TLS server context with `certificate` (chain) and `key`: TLS 1.2 and
// later, no compression, no client certificate requested.
result<ssl::context> server_tls_context(const std::string& certificate, const std::string& key) {
  if (certificate.empty() || key.empty())
    return invalid_argument("dashboard TLS needs both a certificate and a key file");
  ssl::context ctx{ssl::context::tls_server};
  beast::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                      ssl::context::no_tlsv1_1 | ssl::context::no_compression |
                      ssl::context::single_dh_use,
                  ec);
  if (ec)
    return io_error("dashboard TLS: " + ec.message());
  ctx.use_certificate_chain_file(certificate, ec);
  if (ec)
    return io_error("dashboard TLS: certificate " + certificate + ": " + ec.message());
  ctx.use_private_key_file(key, ssl::context::pem, ec);
  if (ec)
    return io_error("dashboard TLS: key " + key + ": " + ec.message());
  return std::move(ctx);  // move-only
}

} // namespace

struct http_server::impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::optional<ssl::context> tls;  // set: HTTPS
  std::shared_ptr<shared_state> state = std::make_shared<shared_state>();
  std::thread thread;
  uint16_t port = 0;
  std::atomic<bool> stopped{false};

  void accept() {
    acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
        beast::error_code ignored;
        s.close(ignored);
        return;
      }
      if (!ec) {
        if (state->sessions.load() < state->options.max_connections) {
          auto& live = state->live;
          live.erase(std::remove_if(live.begin(), live.end(),
                                    [](const std::weak_ptr<session>& w) { return w.expired(); }),
                     live.end());
          if (tls) {
            auto fresh = std::make_shared<http_session<beast::ssl_stream<beast::tcp_stream>>>(
                state, std::move(s), *tls);
            live.push_back(fresh);
            fresh->run();
          } else {
            auto fresh = std::make_shared<http_session<beast::tcp_stream>>(state, std::move(s));
            live.push_back(fresh);
            fresh->run();
          }
        } else {
          beast::error_code ignored;
          s.close(ignored);
        }
      }
      accept();
    });
  }

  void run() {
    for (;;) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        // A handler that threw past its own catch: keep serving.
        std::fprintf(stderr, "dtrain dashboard: %s\n", e.what());
      }
    }
  }
};

result<std::unique_ptr<http_server>> http_server::start(const options& o, handler h) {
  auto p = std::make_unique<impl>();
  p->state->options = o;
  p->state->handle = std::move(h);
  const std::string where = o.bind + ":" + std::to_string(o.port);
  beast::error_code ec;
  auto address = asio::ip::make_address(o.bind, ec);
  if (ec)
    return invalid_argument("dashboard address " + o.bind + ": not an IP address (" +
                            ec.message() + ")");
  if (!o.certificate.empty() || !o.key.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(auto ctx, server_tls_context(o.certificate, o.key));
    p->tls.emplace(std::move(ctx));
  }
  tcp::endpoint endpoint{address, o.port};
  p->acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    p->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    p->acceptor.bind(endpoint, ec);
  if (!ec)
    p->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return io_error("dashboard: cannot listen on " + where + ": " + ec.message());
  p->port = p->acceptor.local_endpoint().port();
  p->accept();
  impl* raw = p.get();
  p->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<http_server>(new http_server(std::move(p)));
}

http_server::http_server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

http_server::~http_server() { stop(); }

uint16_t http_server::port() const { return impl_->port; }

bool http_server::tls() const { return impl_->tls.has_value(); }

void http_server::stop() {
  if (impl_->stopped.exchange(true))
    return;
  // On the I/O thread: closing the acceptor and every open connection
  // ends their pending operations, after which run() runs out of work and
  // returns. A connection accepted meanwhile is closed by the same loop's
  // end: the accept handler sees the acceptor closed.
  asio::post(impl_->io, [p = impl_.get()] {
    beast::error_code ignored;
    p->acceptor.close(ignored);
    for (auto& w : p->state->live)
      if (auto s = w.lock())
        s->close();
    p->state->live.clear();
  });
  if (impl_->thread.joinable())
    impl_->thread.join();
}

} // namespace dtrain::dashboard
