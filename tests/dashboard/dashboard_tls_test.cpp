// The dashboard over HTTPS: a head started with certificates made by
// `dtrain cert` and --dashboard-tls (off loopback it always serves HTTPS;
// tests stay on loopback, so they force it) answers an HTTPS client that
// checks the chain against the cluster CA, still only with the token;
// plain HTTP to that port gets no answer. Without certificates,
// --dashboard-tls is refused naming `dtrain cert`.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/http_client.hpp"
#include "support/https_client.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

uint16_t port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos)
    return 0;
  return static_cast<uint16_t>(std::atoi(url.substr(colon + 1).c_str()));
}

// `dtrain cert ARGS...` in the current DTRAIN_HOME; its exit code.
int cert(const temp_dir& home, const std::vector<std::string>& args) {
  std::vector<std::string> argv{DTRAIN_BINARY, "cert"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = home.file("cert.log");
  child_process p(argv, log, "/dev/null");
  const int code = p.wait(milliseconds(30000));
  BOOST_TEST_MESSAGE("dtrain cert -> " << code << "\n" << read_file(log));
  return code;
}

} // namespace

BOOST_AUTO_TEST_SUITE(dashboard_tls)

BOOST_AUTO_TEST_CASE(head_dashboard_serves_https_with_the_heads_certificate_and_still_needs_its_token) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  BOOST_REQUIRE(cert(home, {"ca", "create"}) == 0);
  BOOST_REQUIRE(cert(home, {"create", "--head", "--host", "127.0.0.1"}) == 0);
  const std::string ca = home.file("tls/ca.pem");

  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address"), "--dashboard-port", "0", "--dashboard-tls",
                      "--dashboard-file", home.file("dashboard.url")},
                     home.file("head.log"));
  const std::string url =
      trimmed(dtrain::testing::wait_for_file(home.file("dashboard.url"), milliseconds(10000)));
  const uint16_t port = port_of(url);
  BOOST_REQUIRE_MESSAGE(port != 0, read_file(home.file("head.log")));
  BOOST_TEST(contains(url, "https://127.0.0.1:"), url);
  BOOST_TEST(contains(read_file(home.file("head.log")), "https://127.0.0.1:"));
  const std::string token = trimmed(read_file(home.file("dashboard-token")));
  BOOST_REQUIRE(token.size() == 32u);

  // Verified against the cluster CA, host name included.
  auto cluster = dtrain::testing::https_get(port, "/api/v1/cluster", ca, token, true);
  BOOST_TEST(cluster.status == 200, cluster.error);
  BOOST_TEST(contains(cluster.body, "\"nodes\":"), cluster.body);
  BOOST_TEST(dtrain::testing::https_get(port, "/api/v1/cluster", ca).status == 401);
  BOOST_TEST(dtrain::testing::https_get(port, "/metrics", ca, std::string(32, '0')).status == 401);
  auto metrics = dtrain::testing::https_get(port, "/metrics", ca, token, true);
  BOOST_TEST(metrics.status == 200, metrics.error);
  BOOST_TEST(contains(metrics.body, "dtrain_up{part=\"cluster\"} 1"), metrics.body);
  // The page too (no token needed for it, as over HTTP).
  BOOST_TEST(dtrain::testing::https_get(port, "/", ca).status == 200);

  // Plain HTTP to the HTTPS port: no answer, and the server keeps serving.
  BOOST_TEST(dtrain::testing::http_get(port, "/api/v1/cluster", token).status == -1);
  BOOST_TEST(dtrain::testing::http_get(port, "/").status == -1);
  BOOST_TEST(dtrain::testing::https_get(port, "/api/v1/cluster", ca, token).status == 200);

  // A client trusting another CA refuses the head's certificate.
  temp_dir other;
  setenv("DTRAIN_HOME", other.path().c_str(), 1);
  BOOST_REQUIRE(cert(other, {"ca", "create"}) == 0);
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  auto refused = dtrain::testing::https_get(port, "/api/v1/cluster", other.file("tls/ca.pem"), token);
  BOOST_TEST(refused.status == -1);
  BOOST_TEST(!refused.error.empty());

  BOOST_TEST(head.stop(SIGTERM, milliseconds(10000)));
}

BOOST_AUTO_TEST_CASE(dashboard_tls_without_certificates_is_refused_naming_dtrain_cert) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address"), "--dashboard-port", "0", "--dashboard-tls"},
                     home.file("head.log"));
  const int code = head.wait(milliseconds(30000));
  const std::string log = read_file(home.file("head.log"));
  BOOST_TEST(code == 2, log);
  BOOST_TEST(contains(log, "--dashboard-tls"), log);
  BOOST_TEST(contains(log, "dtrain cert ca create"), log);
  BOOST_TEST(read_file(home.file("head.address")).empty());
}

BOOST_AUTO_TEST_CASE(dashboard_off_loopback_without_certificates_names_dtrain_cert) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--dashboard-port", "0",
                      "--dashboard-bind", "0.0.0.0"},
                     home.file("head.log"));
  const int code = head.wait(milliseconds(30000));
  const std::string log = read_file(home.file("head.log"));
  BOOST_TEST(code == 2, log);
  BOOST_TEST(contains(log, "dtrain cert create --head"), log);
  BOOST_TEST(contains(log, "loopback only"), log);
}

BOOST_AUTO_TEST_SUITE_END()
