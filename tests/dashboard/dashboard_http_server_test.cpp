// The dashboard's HTTP server (limits, timeouts, stop), its address
// policy and its token file, on loopback.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <thread>

#include "support/http_client.hpp"
#include "dtrain/dashboard/dashboard.hpp"
#include "dtrain/dashboard/server.hpp"
#include "dtrain/dashboard/token.hpp"
#include "support/test_util.hpp"

namespace {
// Accept failures on demand: while injected_accept_failures is above zero,
// accept() fails with injected_accept_errno instead of accepting.
std::atomic<int> injected_accept_failures{0};
std::atomic<int> injected_accept_errno{0};
} // namespace

// This program's accept() comes before libc's for libdtrain_dashboard
// (Boost.Asio calls ::accept); without an injected failure it is libc's.
extern "C" int accept(int fd, sockaddr* address, socklen_t* length) {
  int left = injected_accept_failures.load();
  while (left > 0 && !injected_accept_failures.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0) {
    errno = injected_accept_errno.load();
    return -1;
  }
  using accept_fn = int (*)(int, sockaddr*, socklen_t*);
  static const auto real = reinterpret_cast<accept_fn>(::dlsym(RTLD_NEXT, "accept"));
  return real(fd, address, length);
}

using namespace dtrain;
using namespace dtrain::dashboard;
using dtrain::testing::http_get;
using dtrain::testing::http_request_to;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

namespace {

std::unique_ptr<http_server> echo_server(std::atomic<int>& calls, http_server::options o = {}) {
  auto s = http_server::start(o, [&calls](const http_request& r) {
    ++calls;
    return http_response{200, "text/plain", r.method + " " + r.target + " " + r.authorization, {}};
  });
  BOOST_REQUIRE_MESSAGE(s.is_ok(), s.error().to_string());
  return std::move(*s);
}

void set_timeout(int fd, milliseconds limit) {
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// A connection that sends `bytes` and then waits; how long until the
// server closes it (recv returns 0 or fails), at most `limit`.
milliseconds time_until_closed(uint16_t port, const std::string& bytes, milliseconds limit) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  set_timeout(fd, limit);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto start = steady_clock::now();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    if (!bytes.empty())
      (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    char buf[4096];
    while (::recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }
  ::close(fd);
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
}

// A keep-alive connection to 127.0.0.1:port (connected at once, or by
// connect()); every socket call waits at most 10 s.
class connection {
public:
  explicit connection(uint16_t port, bool now = true)
    : fd_(::socket(AF_INET, SOCK_STREAM, 0)), port_(port) {
    set_timeout(fd_, milliseconds(10000));
    if (now)
      connect();
  }
  bool connect() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    return connected_;
  }
  ~connection() { close(); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

  // GET `target`, keeping the connection open: the answer's status, or -1
  // without one (closed, reset, timed out).
  int get(const std::string& target) { return send_get(target) ? receive() : -1; }

  bool send_get(const std::string& target) {
    const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    return ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
  }

  // The next answer's status, or -1.
  int receive() {
    std::string raw;
    size_t end = std::string::npos;
    char buf[4096];
    while ((end = raw.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0)
        return -1;
      raw.append(buf, static_cast<size_t>(n));
    }
    const size_t length_at = raw.find("Content-Length: ");
    if (raw.compare(0, 9, "HTTP/1.1 ") != 0 || length_at == std::string::npos)
      return -1;
    const size_t length = std::strtoul(raw.c_str() + length_at + 16, nullptr, 10);
    while (raw.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0)
        return -1;
      raw.append(buf, static_cast<size_t>(n));
    }
    return std::atoi(raw.c_str() + 9);
  }

  // Whether the server closes the connection within `limit`, having sent
  // nothing (`received` counts what it sent).
  bool closed_within(milliseconds limit, size_t& received) {
    set_timeout(fd_, limit);
    received = 0;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        received += static_cast<size_t>(n);
        continue;
      }
      return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }

private:
  int fd_;
  uint16_t port_;
  bool connected_ = false;
};

// Polls `done` every 10 ms for at most `limit`; whether it came true.
template <class Predicate>
bool eventually(Predicate done, milliseconds limit = milliseconds(10000)) {
  const auto end = steady_clock::now() + limit;
  while (!done()) {
    if (steady_clock::now() > end)
      return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// A handler that answers "/slow" once `release` is set or `block` has
// passed (flagging `started` and then `finished`), and everything else at
// once; counts its calls.
struct blocking_handler {
  milliseconds block;
  std::atomic<int> calls{0};
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::atomic<bool> release{false};

  http_server::handler handler() {
    return [this](const http_request& r) {
      ++calls;
      if (r.target == "/slow") {
        started = true;
        const auto end = steady_clock::now() + block;
        while (!release.load() && steady_clock::now() < end)
          std::this_thread::sleep_for(milliseconds(5));
        finished = true;
      }
      return http_response{200, "text/plain", "done " + r.target, {}};
    };
  }
};

std::unique_ptr<http_server> start_server(const http_server::options& o, http_server::handler h,
                                          http_server::quick_handler quick = {}) {
  auto s = http_server::start(o, std::move(h), std::move(quick));
  BOOST_REQUIRE_MESSAGE(s.is_ok(), s.error().to_string());
  return std::move(*s);
}

} // namespace

BOOST_AUTO_TEST_SUITE(dashboard_http_server)

BOOST_AUTO_TEST_CASE(answers_requests_on_its_port_and_stop_joins_its_thread) {
  std::atomic<int> calls{0};
  auto s = echo_server(calls);
  BOOST_TEST(s->port() != 0);
  auto r = http_get(s->port(), "/a?b=c", "t0k");
  BOOST_TEST(r.status == 200);
  BOOST_TEST(r.body == "GET /a?b=c Bearer t0k");
  BOOST_TEST(r.headers.find("Content-Length: 21") != std::string::npos, r.headers);
  BOOST_TEST(r.headers.find("Referrer-Policy: no-referrer") != std::string::npos, r.headers);
  const uint16_t port = s->port();
  const auto start = steady_clock::now();
  s->stop();
  BOOST_TEST((steady_clock::now() - start < milliseconds(2000)));
  BOOST_TEST(http_get(port, "/").status == -1);
  BOOST_TEST(calls.load() == 1);
}

BOOST_AUTO_TEST_CASE(a_header_over_the_limit_is_refused_with_431) {
  std::atomic<int> calls{0};
  auto s = echo_server(calls);
  auto r = http_request_to(s->port(), "GET", "/", "", "X-Big: " + std::string(10000, 'x') + "\r\n");
  BOOST_TEST(r.status == 431);
  BOOST_TEST(calls.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_body_over_the_limit_is_refused_with_413) {
  std::atomic<int> calls{0};
  auto s = echo_server(calls);
  auto r = http_request_to(s->port(), "POST", "/", "",
                           "Content-Length: " + std::to_string(1 << 20) + "\r\n");
  BOOST_TEST(r.status == 413);
  BOOST_TEST(calls.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_silent_or_half_sent_connection_is_closed_after_the_timeout) {
  std::atomic<int> calls{0};
  http_server::options o;
  o.timeout = milliseconds(300);
  auto s = echo_server(calls, o);
  BOOST_TEST(time_until_closed(s->port(), "", milliseconds(5000)).count() < 2000);
  BOOST_TEST(time_until_closed(s->port(), "GET / HTTP/1.1\r\nHost: x\r\n", milliseconds(5000)).count() <
             2000);
  // The server still serves.
  BOOST_TEST(http_get(s->port(), "/").status == 200);
}

BOOST_AUTO_TEST_CASE(stop_closes_open_connections) {
  std::atomic<int> calls{0};
  auto s = echo_server(calls);
  // A connection the server serves, and keeps open (keep-alive).
  connection c(s->port());
  BOOST_REQUIRE(c.connected());
  BOOST_REQUIRE(c.get("/") == 200);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    s->stop();
  });
  const auto start = steady_clock::now();
  size_t received = 0;
  BOOST_TEST(c.closed_within(milliseconds(5000), received));
  BOOST_TEST((steady_clock::now() - start < milliseconds(2000)));
  BOOST_TEST(received == 0u);
  stopper.join();
}

BOOST_AUTO_TEST_CASE(connections_beyond_max_connections_are_closed_unanswered_until_one_closes) {
  std::atomic<int> calls{0};
  http_server::options o;
  o.max_connections = 2;
  auto s = echo_server(calls, o);
  connection a(s->port()), b(s->port());
  BOOST_REQUIRE(a.get("/a") == 200);
  BOOST_REQUIRE(b.get("/b") == 200);
  // The third is accepted by the kernel, then closed by the server.
  connection extra(s->port());
  BOOST_REQUIRE(extra.connected());
  size_t received = 0;
  BOOST_TEST(extra.closed_within(milliseconds(5000), received));
  BOOST_TEST(received == 0u);
  BOOST_TEST(calls.load() == 2);
  // The two open ones still work.
  BOOST_TEST(a.get("/a") == 200);
  BOOST_TEST(b.get("/b") == 200);
  // Once one closes, a new one is served (the server may take a moment
  // to see the close).
  a.close();
  BOOST_TEST(eventually([&] {
    connection fresh(s->port());
    return fresh.get("/fresh") == 200;
  }));
}

BOOST_AUTO_TEST_CASE(a_handler_that_blocks_holds_up_only_its_own_connection) {
  blocking_handler h{milliseconds(3000)};
  auto s = start_server({}, h.handler());
  std::atomic<int> slow_status{0};
  std::thread slow([&] { slow_status = http_get(s->port(), "/slow").status; });
  BOOST_REQUIRE(eventually([&] { return h.started.load(); }));
  const auto start = steady_clock::now();
  auto fast = http_get(s->port(), "/fast");
  const auto took = steady_clock::now() - start;
  BOOST_TEST(fast.status == 200);
  BOOST_TEST(fast.body == "done /fast");
  BOOST_TEST((took < milliseconds(1500)));
  BOOST_TEST(!h.finished.load());  // answered while the other blocked
  slow.join();
  BOOST_TEST(slow_status.load() == 200);
}

BOOST_AUTO_TEST_CASE(the_quick_handler_answers_while_every_worker_is_busy) {
  blocking_handler h{milliseconds(3000)};
  http_server::options o;
  o.workers = 1;
  auto s = start_server(o, h.handler(), [](const http_request& r) -> std::optional<http_response> {
    if (r.target == "/page")
      return http_response{200, "text/html", "page", {}};
    return std::nullopt;
  });
  std::thread slow([&] { (void)http_get(s->port(), "/slow"); });
  BOOST_REQUIRE(eventually([&] { return h.started.load(); }));
  const auto start = steady_clock::now();
  auto page = http_get(s->port(), "/page");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(page.body == "page");
  BOOST_TEST((steady_clock::now() - start < milliseconds(1500)));
  BOOST_TEST(!h.finished.load());
  slow.join();
  BOOST_TEST(h.calls.load() == 1);  // /page never reached the handler
}

BOOST_AUTO_TEST_CASE(a_handler_that_throws_answers_500_and_the_server_goes_on) {
  auto s = start_server(
      {}, [](const http_request&) -> http_response { throw std::runtime_error("broken route"); },
      [](const http_request& r) -> std::optional<http_response> {
        if (r.target == "/quick")
          throw std::runtime_error("broken file");
        return std::nullopt;
      });
  auto slow = http_get(s->port(), "/api");
  BOOST_TEST(slow.status == 500);
  BOOST_TEST(slow.body == "internal error: broken route\n");
  auto quick = http_get(s->port(), "/quick");
  BOOST_TEST(quick.status == 500);
  BOOST_TEST(quick.body == "internal error: broken file\n");
}

BOOST_AUTO_TEST_CASE(stop_waits_for_the_running_handler_and_abandons_the_waiting_ones) {
  // The handler holds its worker until released (20 s at most).
  blocking_handler h{milliseconds(20000)};
  http_server::options o;
  o.workers = 1;
  std::atomic<int> seen{0};
  auto s = start_server(o, h.handler(), [&](const http_request&) -> std::optional<http_response> {
    ++seen;
    return std::nullopt;
  });
  std::atomic<int> slow_status{0}, queued_status{0};
  std::atomic<bool> slow_done{false}, stopped{false};
  std::thread slow([&] {
    slow_status = http_get(s->port(), "/slow").status;
    slow_done = true;
  });
  BOOST_REQUIRE(eventually([&] { return h.started.load(); }));
  std::thread queued([&] { queued_status = http_get(s->port(), "/queued").status; });
  // The second request waits for the only worker.
  BOOST_REQUIRE(eventually([&] { return seen.load() == 2; }));
  std::thread stopper([&] {
    s->stop();
    stopped = true;
  });
  // stop() closes the connections at once, and waits for the handler.
  BOOST_TEST(eventually([&] { return slow_done.load(); }));
  std::this_thread::sleep_for(milliseconds(200));
  BOOST_TEST(!stopped.load());
  h.release = true;
  stopper.join();
  slow.join();
  queued.join();
  BOOST_TEST(h.finished.load());
  BOOST_TEST(h.calls.load() == 1);  // /queued abandoned
  BOOST_TEST(slow_status.load() == -1);  // finished after stop(): not sent
  BOOST_TEST(queued_status.load() == -1);
  std::this_thread::sleep_for(milliseconds(200));
  BOOST_TEST(h.calls.load() == 1);
}

BOOST_AUTO_TEST_CASE(stop_from_two_threads_returns_in_both_only_after_everything_is_joined) {
  blocking_handler h{milliseconds(20000)};
  auto s = start_server({}, h.handler());
  std::atomic<bool> client_done{false};
  std::thread client([&] {
    (void)http_get(s->port(), "/slow");
    client_done = true;
  });
  BOOST_REQUIRE(eventually([&] { return h.started.load(); }));
  std::atomic<int> returned{0};
  auto stop = [&] {
    s->stop();
    ++returned;
  };
  std::thread first(stop), second(stop);
  // Both are in stop() (the connection closed proves one is); neither
  // returns while the handler runs.
  BOOST_TEST(eventually([&] { return client_done.load(); }));
  std::this_thread::sleep_for(milliseconds(300));
  BOOST_TEST(returned.load() == 0);
  h.release = true;
  first.join();
  second.join();
  client.join();
  BOOST_TEST(returned.load() == 2);
  s->stop();  // again: returns at once
  BOOST_TEST(http_get(s->port(), "/").status == -1);
}

BOOST_AUTO_TEST_CASE(stop_from_a_handler_or_the_io_thread_does_not_deadlock) {
  for (const bool quick : {false, true}) {
    std::atomic<http_server*> server{nullptr};
    std::atomic<int> calls{0};
    // Each only starts the stop: a thread cannot join itself.
    auto stop_and_answer = [&](const http_request&) {
      ++calls;
      server.load()->stop();
      return http_response{200, "text/plain", "stopping", {}};
    };
    http_server::quick_handler on_io_thread = [&](const http_request& r) {
      return std::optional<http_response>(stop_and_answer(r));
    };
    auto s = quick ? start_server({}, {}, on_io_thread) : start_server({}, stop_and_answer);
    server = s.get();
    BOOST_TEST(http_get(s->port(), "/").status == -1, "quick " << quick);  // dropped
    const auto start = steady_clock::now();
    s->stop();
    BOOST_TEST((steady_clock::now() - start < milliseconds(2000)));
    BOOST_TEST(calls.load() == 1);
  }
}

BOOST_AUTO_TEST_CASE(accept_failures_are_tried_again_after_a_pause_not_in_a_busy_loop) {
  std::atomic<int> calls{0};
  http_server::options o;
  o.accept_retry = milliseconds(100);
  auto s = echo_server(calls, o);
  connection c(s->port(), false);  // its socket made before the limit
  // The lowest free descriptor as the limit: the server's accept() gets
  // EMFILE, while the connection waits in the listen backlog.
  const int lowest_free = ::dup(0);
  BOOST_REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  rlimit before{};
  BOOST_REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  rlimit tight = before;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  // Connecting needs no new descriptor; accepting does.
  const bool connected = c.connect() && c.send_get("/during");
  rusage cpu_before{}, cpu_after{};
  ::getrusage(RUSAGE_SELF, &cpu_before);
  std::this_thread::sleep_for(milliseconds(1000));
  ::getrusage(RUSAGE_SELF, &cpu_after);
  const int calls_while_tight = calls.load();
  ::setrlimit(RLIMIT_NOFILE, &before);
  BOOST_REQUIRE(connected);
  BOOST_TEST(calls_while_tight == 0);  // not accepted: the accepts failed
  auto cpu_ms = [](const rusage& u) {
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000.0 +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000.0;
  };
  // A busy loop would burn most of that second; ten retries next to none.
  BOOST_TEST(cpu_ms(cpu_after) - cpu_ms(cpu_before) < 300.0);
  // With descriptors again, the waiting connection is served.
  BOOST_TEST(c.receive() == 200);
  BOOST_TEST(c.get("/after") == 200);
}

BOOST_AUTO_TEST_CASE(an_accept_that_fails_for_another_reason_is_tried_again_at_once) {
  std::atomic<int> calls{0};
  http_server::options o;
  o.accept_retry = milliseconds(30000);  // a pause would outlast the client's 10 s
  auto s = echo_server(calls, o);
  // What Linux's accept passes on from a connection that failed before it
  // was accepted: only that one is lost, the next is accepted at once.
  for (int e : {ENETDOWN, EHOSTUNREACH, EPERM}) {
    injected_accept_errno = e;
    injected_accept_failures = 3;
    const auto start = steady_clock::now();
    connection c(s->port());
    BOOST_TEST(c.get("/after") == 200, "errno " << e);
    BOOST_TEST(injected_accept_failures.load() == 0);  // the failures did happen
    BOOST_TEST((steady_clock::now() - start < milliseconds(3000)), "errno " << e);
  }
  injected_accept_failures = 0;
}

BOOST_AUTO_TEST_CASE(an_address_in_use_is_an_error_naming_it) {
  std::atomic<int> calls{0};
  auto a = echo_server(calls);
  http_server::options o;
  o.port = a->port();
  // SO_REUSEADDR does not let two listeners share a port on Linux.
  auto b = http_server::start(o, [](const http_request&) { return http_response{}; });
  BOOST_REQUIRE(!b.is_ok());
  BOOST_TEST(b.error().message().find("127.0.0.1:" + std::to_string(a->port())) != std::string::npos,
             b.error().message());
}

BOOST_AUTO_TEST_CASE(only_loopback_addresses_are_accepted_until_tls) {
  for (const char* ok : {"127.0.0.1", "127.0.0.2", "::1", "localhost"})
    BOOST_TEST(check_bind(ok).is_ok(), ok);
  for (const char* refused : {"0.0.0.0", "", "::", "10.1.2.3", "192.168.0.1"}) {
    status s = check_bind(refused);
    BOOST_TEST(!s.is_ok(), refused);
    BOOST_TEST(s.code() == error_code::invalid_argument);
    BOOST_TEST(s.message().find("loopback only") != std::string::npos, s.message());
    BOOST_TEST(s.message().find("TLS") != std::string::npos, s.message());
    BOOST_TEST(s.message().find("dtrain cert create --head") != std::string::npos, s.message());
    // With the head's certificate the dashboard serves HTTPS there.
    BOOST_TEST(check_bind(refused, true).is_ok(), refused);
  }
}

BOOST_AUTO_TEST_CASE(the_token_file_is_private_and_kept_across_starts) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("home/dashboard-token");
  auto a = load_or_create_token(path);
  BOOST_REQUIRE(a.is_ok());
  BOOST_TEST(a->size() == 32u);
  BOOST_TEST(a->find_first_not_of("0123456789abcdef") == std::string::npos);
  struct stat st {};
  BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  auto b = load_or_create_token(path);
  BOOST_TEST(*b == *a);
  // A token others could read is not reused.
  ::chmod(path.c_str(), 0644);
  auto c = load_or_create_token(path);
  BOOST_TEST(*c != *a);
  BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(token_matches(*c, *c));
  BOOST_TEST(!token_matches("", ""));
  BOOST_TEST(!token_matches(c->substr(1), *c));
}

// Two dashboards starting at the same moment: what load_or_create_token
// gave each.
std::pair<result<std::string>, result<std::string>> two_starters_at_once(const std::string& path) {
  std::atomic<int> ready{0};
  std::optional<result<std::string>> a, b;
  auto race = [&](std::optional<result<std::string>>& out) {
    ++ready;
    while (ready.load() < 2)
      std::this_thread::yield();
    out.emplace(load_or_create_token(path));
  };
  std::thread ta(race, std::ref(a)), tb(race, std::ref(b));
  ta.join();
  tb.join();
  return {std::move(*a), std::move(*b)};
}

BOOST_AUTO_TEST_CASE(dashboards_creating_the_token_at_once_end_up_with_the_same_one) {
  for (int round = 0; round < 40; ++round) {
    dtrain::testing::temp_dir dir;
    const std::string path = dir.file("home/dashboard-token");
    auto [a, b] = two_starters_at_once(path);
    BOOST_REQUIRE_MESSAGE(a.is_ok(), a.error().to_string());
    BOOST_REQUIRE_MESSAGE(b.is_ok(), b.error().to_string());
    BOOST_TEST(*a == *b, "round " << round);
    BOOST_TEST(dtrain::testing::read_file(path) == *a + "\n");
  }
}

BOOST_AUTO_TEST_CASE(dashboards_replacing_an_unusable_token_at_once_end_up_with_the_same_one) {
  for (int round = 0; round < 40; ++round) {
    dtrain::testing::temp_dir dir;
    const std::string path = dir.file("dashboard-token");
    // Malformed, or a good token that others may read.
    dtrain::testing::write_file(path, round % 2 ? std::string(32, 'a') + "\n" : "not a token\n");
    ::chmod(path.c_str(), round % 2 ? 0644 : 0600);
    auto [a, b] = two_starters_at_once(path);
    BOOST_REQUIRE_MESSAGE(a.is_ok(), a.error().to_string());
    BOOST_REQUIRE_MESSAGE(b.is_ok(), b.error().to_string());
    BOOST_TEST(*a == *b, "round " << round);
    BOOST_TEST(*a != std::string(32, 'a'), "round " << round);
    BOOST_TEST(dtrain::testing::read_file(path) == *a + "\n", "round " << round);
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0600u, "round " << round);
  }
}

BOOST_AUTO_TEST_SUITE_END()
