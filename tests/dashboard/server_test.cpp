// The dashboard's HTTP server (limits, timeouts, stop), its address
// policy and its token file, on loopback.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "dashboard/http_client.hpp"
#include "dtrain/dashboard/dashboard.hpp"
#include "dtrain/dashboard/server.hpp"
#include "dtrain/dashboard/token.hpp"
#include "test_util.hpp"

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

// A connection that sends `bytes` and then waits; how long until the
// server closes it (recv returns 0 or fails), at most `limit`.
milliseconds time_until_closed(uint16_t port, const std::string& bytes, milliseconds limit) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{static_cast<time_t>(limit.count() / 1000), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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
  const uint16_t port = s->port();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    s->stop();
  });
  BOOST_TEST(time_until_closed(port, "", milliseconds(5000)).count() < 2000);
  stopper.join();
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

BOOST_AUTO_TEST_SUITE_END()
