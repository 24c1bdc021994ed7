#include "dtrain/dashboard/server.hpp"

#include "dtrain/core/check.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
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
  http_server::quick_handler quick;
  std::atomic<int> sessions{0};
  // Set by stop(): no handler starts, no finished answer is sent.
  std::atomic<bool> stopped{false};
  // Where handlers run, off the I/O thread (the server's; used from the
  // I/O thread only, which the server joins before destroying it).
  asio::thread_pool* pool = nullptr;
  // The open sessions, so that stop() can close them (I/O thread only).
  std::vector<std::weak_ptr<session>> live;
};

// What `h` answers to `r`, or 500 when it throws (no exception leaves a
// handler of the server's threads).
template <class Handler>
auto answer(const Handler& h, const http_request& r) -> decltype(h(r)) {
  try {
    return h(r);
  } catch (const std::exception& e) {
    return http_response{500, "text/plain; charset=utf-8",
                         std::string("internal error: ") + e.what() + "\n", {}};
  } catch (...) {
    return http_response{500, "text/plain; charset=utf-8", "internal error\n", {}};
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
    const unsigned version = req.version();
    const bool keep_alive = req.keep_alive();
    if (state_->quick) {
      if (auto out = answer(state_->quick, r))
        return write(*out, version, keep_alive);
    }
    // The handler may block (the head's timeout): on a worker, so that the
    // I/O thread keeps serving every other connection; its answer comes
    // back to this connection's executor. No read is pending meanwhile, so
    // the connection's timeout does not run while the handler does.
    asio::post(*state_->pool, [self = this->shared_from_this(), r = std::move(r), version,
                              keep_alive]() mutable {
      if (self->state_->stopped)
        return;  // stop() abandons requests that have not started
      http_response out = answer(self->state_->handle, r);
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), out = std::move(out), version, keep_alive] {
        self->write(out, version, keep_alive);
      });
    });
  }

  void refuse(int code, const char* why) {
    write({code, "text/plain; charset=utf-8", why, {}}, 11, false);
  }

  void write(const http_response& out, unsigned version, bool keep_alive) {
    if (state_->stopped)
      return close();  // an answer finished after stop(): dropped
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
  return ctx;  // moved: a local returned
}

} // namespace

struct http_server::impl {
  explicit impl(const options& o) : pool(static_cast<std::size_t>(std::max(1, o.workers))) {
    state->options = o;
    state->pool = &pool;
  }

  // Declared first, destroyed last: what the sessions use. Sessions that
  // the pool's abandoned jobs and the queue's handlers hold close their
  // sockets on `io` when those are destroyed.
  std::optional<ssl::context> tls;  // set: HTTPS
  asio::io_context io{1};
  // Runs the handlers. Destroyed before `io`: its abandoned jobs hold
  // sessions (and the shared state), released there.
  asio::thread_pool pool;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::shared_ptr<shared_state> state = std::make_shared<shared_state>();
  std::thread thread;
  uint16_t port = 0;
  bool accept_failing = false;  // I/O thread only
  std::once_flag stop_once;
  std::mutex join_mutex;  // held by the caller that joins; others wait on it
  bool joined = false;    // under join_mutex

  void accept() {
    acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
        beast::error_code ignored;
        s.close(ignored);
        return;
      }
      if (ec) {
        if (lacks_resources(ec))
          return accept_later(ec);
        // One connection failed before it was accepted (the peer reset it,
        // a network error passed on by accept): the next ones are fine, so
        // accept again at once, quietly (that one's client sees the error).
        return accept();
      }
      accept_failing = false;
      if (state->sessions.load() < state->options.max_connections)
        open_session(std::move(s));
      else {
        beast::error_code ignored;
        s.close(ignored);
      }
      accept();
    });
  }

  // Whether an accept failed for want of a resource (descriptors, buffers,
  // memory), which accepting again at once would not cure.
  static bool lacks_resources(const beast::error_code& ec) {
    if (ec.category() != boost::system::system_category())
      return false;
    const int e = ec.value();
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
  }

  // The accept failed for want of a resource (EMFILE, ENFILE, ENOBUFS, ENOMEM):
  // the connection waits in the backlog, so accepting again at once would
  // fail again at once, a busy loop. Try again after accept_retry.
  void accept_later(const beast::error_code& ec) {
    if (!accept_failing)  // once per spell of failures, not every retry
      std::fprintf(stderr, "dtrain dashboard: accept: %s; trying again every %lld ms\n",
                   ec.message().c_str(),
                   static_cast<long long>(state->options.accept_retry.count()));
    accept_failing = true;
    accept_retry.expires_after(state->options.accept_retry);
    accept_retry.async_wait([this](beast::error_code wait_ec) {
      if (!wait_ec && acceptor.is_open())
        accept();
    });
  }

  void open_session(tcp::socket s) {
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

  bool on_own_thread() {
    return io.get_executor().running_in_this_thread() ||
           pool.get_executor().running_in_this_thread();
  }

  // Once, from whichever caller comes first: no handler starts after it,
  // and on the I/O thread the acceptor and every connection close, after
  // which run() runs out of work and returns (a connection accepted
  // meanwhile is closed by the accept handler, which sees the acceptor
  // closed).
  void begin_stop() {
    std::call_once(stop_once, [this] {
      state->stopped = true;
      pool.stop();  // requests not started are abandoned
      asio::post(io, [this] {
        beast::error_code ignored;
        acceptor.close(ignored);
        accept_retry.cancel();
        for (auto& w : state->live)
          if (auto s = w.lock())
            s->close();
        state->live.clear();
      });
    });
  }

  // Waits for the running handlers (each bounded by the caller's own
  // timeouts) and the I/O thread; every caller returns after both.
  void join() {
    std::lock_guard<std::mutex> lock(join_mutex);
    if (joined)
      return;
    pool.join();
    if (thread.joinable())
      thread.join();
    joined = true;
  }
};

result<std::unique_ptr<http_server>> http_server::start(const options& o, handler h,
                                                        quick_handler quick) {
  if (o.workers < 1)
    return invalid_argument("dashboard workers: " + std::to_string(o.workers) +
                            ": at least one thread must run the handler");
  auto p = std::make_unique<impl>(o);
  p->state->handle = std::move(h);
  p->state->quick = std::move(quick);
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

http_server::~http_server() {
  // Destroyed by its own handler or I/O thread, it would free what that
  // thread still runs on.
  DTRAIN_CHECK(!impl_->on_own_thread(), "an http_server destroyed from its own handler");
  stop();
}

uint16_t http_server::port() const { return impl_->port; }

bool http_server::tls() const { return impl_->tls.has_value(); }

void http_server::stop() {
  impl_->begin_stop();
  // A thread cannot join itself: from a handler or the I/O thread, stop()
  // only starts the stop; the owner's stop() or destructor joins.
  if (impl_->on_own_thread())
    return;
  impl_->join();
}

} // namespace dtrain::dashboard
