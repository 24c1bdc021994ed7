// The web dashboard of a head process (dashboard/): its token, its JSON
// API, its Prometheus text (checked by promtool) and its refusal of a
// non-loopback bind, against `dtrain start --head --dashboard-port 0` with
// a node and one finished experiment, all on loopback.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/dtrain_command.hpp"
#include "support/http_client.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

using dtrain::testing::http_get;
using dtrain::testing::http_reply;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// "http://127.0.0.1:PORT/" -> PORT (0 if not that shape).
uint16_t port_of(const std::string& url) {
  const size_t colon = url.rfind(':');
  if (colon == std::string::npos)
    return 0;
  return static_cast<uint16_t>(std::atoi(url.substr(colon + 1).c_str()));
}

// `promtool check metrics` on `text`; "" when it passes, else its output.
// Fails the test when promtool is not installed.
std::string promtool_complaints(const temp_dir& dir, const std::string& text) {
  if (::access("/usr/bin/promtool", X_OK) != 0) {
    BOOST_FAIL("promtool not found (/usr/bin/promtool, Debian package prometheus): run "
               "tools/install-deps.sh as root");
  }
  dtrain::testing::write_file(dir.file("metrics.txt"), text);
  const std::string lint = "/usr/bin/promtool check metrics < " + dir.file("metrics.txt") + " > " +
                           dir.file("promtool.log") + " 2>&1";
  if (std::system(("timeout 60 sh -c '" + lint + "'").c_str()) == 0)
    return "";
  return "promtool: " + dtrain::testing::read_file(dir.file("promtool.log"));
}

// Polls `path` until its body contains `part` (or 60 s pass); the last body.
std::string wait_for_body(uint16_t port, const std::string& path, const std::string& token,
                          const std::string& part) {
  std::string body;
  for (int i = 0; i < 600; ++i) {
    body = http_get(port, path, token).body;
    if (contains(body, part))
      break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return body;
}

// The value of the first sample line of `text` that starts with `prefix`
// (name and labels); NaN when there is none.
double sample_value(const std::string& text, const std::string& prefix) {
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos)
    return std::nan("");
  const size_t end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, end - at - 1);
  return std::atof(line.substr(line.rfind(' ') + 1).c_str());
}

// `"name":VALUE` in the report of `epoch` in a /api/v1/trials/../metrics body.
double reported(const std::string& body, int64_t epoch, const std::string& name) {
  const size_t at = body.find("{\"epoch\":" + std::to_string(epoch) + ",");
  if (at == std::string::npos)
    return std::nan("");
  const size_t v = body.find("\"" + name + "\":", at);
  const size_t next = body.find("{\"epoch\":", at + 1);
  if (v == std::string::npos || (next != std::string::npos && v > next))
    return std::nan("");
  return std::atof(body.c_str() + v + name.size() + 3);
}

// The samples/s of the epoch line of `epoch` in a `dtrain train` log.
double epoch_line_rate(const std::string& log, int64_t epoch) {
  const size_t at = log.find("epoch " + std::to_string(epoch) + "/");
  if (at == std::string::npos)
    return std::nan("");
  const size_t end = log.find(" samples/s", at);
  const size_t line_end = log.find('\n', at);
  if (end == std::string::npos || (line_end != std::string::npos && end > line_end))
    return std::nan("");
  return std::atof(log.c_str() + log.rfind(' ', end - 1) + 1);
}

} // namespace

BOOST_AUTO_TEST_SUITE(dashboard_server)

BOOST_AUTO_TEST_CASE(head_dashboard_serves_the_cluster_experiments_and_metrics_with_its_token) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address"), "--dashboard-port", "0", "--dashboard-file",
                      home.file("dashboard.url")},
                     home.file("head.log"));
  const std::string address =
      trimmed(dtrain::testing::wait_for_file(home.file("head.address"), milliseconds(10000)));
  BOOST_REQUIRE_MESSAGE(!address.empty(), dtrain::testing::read_file(home.file("head.log")));
  const std::string url =
      trimmed(dtrain::testing::wait_for_file(home.file("dashboard.url"), milliseconds(5000)));
  const uint16_t port = port_of(url);
  BOOST_REQUIRE_MESSAGE(port != 0, "dashboard URL: " << url);
  BOOST_TEST(contains(url, "http://127.0.0.1:"), url);
  child_process node({DTRAIN_BINARY, "start", "--address", address, "--slots", "1",
                      "--port-file", home.file("node.address")},
                     home.file("node.log"));
  const std::string node_address =
      trimmed(dtrain::testing::wait_for_file(home.file("node.address"), milliseconds(10000)));
  BOOST_REQUIRE_MESSAGE(!node_address.empty(), dtrain::testing::read_file(home.file("node.log")));

  // The token: 32 hex characters in a file only its owner reads, printed.
  const std::string token = trimmed(dtrain::testing::read_file(home.file("dashboard-token")));
  BOOST_TEST(token.size() == 32u);
  struct stat st {};
  BOOST_REQUIRE(::stat(home.file("dashboard-token").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  // Not in the head's log, which others may read: the URL there has none.
  const std::string head_log = dtrain::testing::read_file(home.file("head.log"));
  BOOST_TEST(!contains(head_log, token), head_log);
  BOOST_TEST(contains(head_log, "dtrain dashboard-token"), head_log);
  {
    child_process print({DTRAIN_BINARY, "dashboard-token"}, home.file("token.log"));
    BOOST_TEST(print.wait(milliseconds(10000)) == 0);
    BOOST_TEST(dtrain::testing::read_file(home.file("token.log")) == token + "\n");
  }

  // The page and its files need no token; nothing else is served without it.
  http_reply page = http_get(port, "/");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(contains(page.body, "uPlot"));
  BOOST_TEST(http_get(port, "/vendor/uPlot.iife.min.js").status == 200);
  BOOST_TEST(http_get(port, "/api/v1/cluster").status == 401);
  BOOST_TEST(http_get(port, "/api/v1/cluster", std::string(32, '0')).status == 401);
  BOOST_TEST(http_get(port, "/metrics").status == 401);
  BOOST_TEST(http_get(port, "/no/such/path").status == 401);

  http_reply cluster = http_get(port, "/api/v1/cluster", token);
  BOOST_TEST(cluster.status == 200);
  BOOST_TEST(contains(cluster.body, "\"address\":\"" + node_address + "\""), cluster.body);
  BOOST_TEST(contains(cluster.body, "\"slots\":{\"used\":0,\"total\":1}"), cluster.body);
  BOOST_TEST(http_get(port, "/api/v1/cluster?token=" + token).status == 200);

  // One experiment of two epochs through the head.
  const std::string experiment = dtrain::testing::regression_experiment(home, 2);
  child_process train({DTRAIN_BINARY, "train", experiment, "--address", address},
                      home.file("train.log"));
  BOOST_REQUIRE_MESSAGE(train.wait(milliseconds(120000)) == 0,
                        dtrain::testing::read_file(home.file("train.log")));

  http_reply experiments = http_get(port, "/api/v1/experiments", token);
  BOOST_TEST(experiments.status == 200);
  BOOST_TEST(contains(experiments.body, "\"id\":1,\"name\":\"regression\""), experiments.body);
  BOOST_TEST(contains(experiments.body, "\"state\":\"completed\""), experiments.body);

  http_reply trials = http_get(port, "/api/v1/experiments/1/trials", token);
  BOOST_TEST(trials.status == 200);
  BOOST_TEST(contains(trials.body, "\"id\":\"1-00000\""), trials.body);
  BOOST_TEST(contains(trials.body, "\"epochs\":2"), trials.body);
  BOOST_TEST(http_get(port, "/api/v1/experiments/7/trials", token).status == 404);
  BOOST_TEST(http_get(port, "/api/v1/experiments/x/trials", token).status == 400);

  http_reply metrics = http_get(port, "/api/v1/trials/1-00000/metrics", token);
  BOOST_TEST(metrics.status == 200);
  BOOST_TEST(contains(metrics.body, "{\"epoch\":1,"), metrics.body);
  BOOST_TEST(contains(metrics.body, "{\"epoch\":2,"), metrics.body);
  BOOST_TEST(contains(metrics.body, "\"validation_loss\":"), metrics.body);
  http_reply since = http_get(port, "/api/v1/trials/1-00000/metrics?since=1", token);
  BOOST_TEST(since.status == 200);
  BOOST_TEST(!contains(since.body, "{\"epoch\":1,"), since.body);
  BOOST_TEST(contains(since.body, "{\"epoch\":2,"), since.body);

  // /metrics is valid Prometheus text, checked by Prometheus's own linter.
  http_reply prom = http_get(port, "/metrics", token);
  BOOST_TEST(prom.status == 200);
  BOOST_TEST(contains(prom.body, "\ndtrain_nodes 1\n"), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_slots{state=\"total\"} 1"), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_trials{state=\"terminated\"} 1"), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_head_resident_memory_bytes "), prom.body);
  BOOST_TEST(promtool_complaints(home, prom.body) == "", prom.body);

  BOOST_TEST(node.stop(SIGTERM, milliseconds(10000)));
  BOOST_TEST(head.stop(SIGTERM, milliseconds(10000)));
  // The dashboard went with the head.
  BOOST_TEST(http_get(port, "/").status == -1);
}

BOOST_AUTO_TEST_CASE(dashboard_off_loopback_is_refused_without_tls) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address"), "--dashboard-port", "0", "--dashboard-bind",
                      "0.0.0.0"},
                     home.file("head.log"));
  const int code = head.wait(milliseconds(30000));
  const std::string log = dtrain::testing::read_file(home.file("head.log"));
  BOOST_TEST(code == 2, log);
  BOOST_TEST(contains(log, "--dashboard-bind 0.0.0.0"), log);
  BOOST_TEST(contains(log, "loopback only"), log);
  BOOST_TEST(contains(log, "TLS"), log);
  BOOST_TEST(dtrain::testing::read_file(home.file("head.address")).empty());
}

BOOST_AUTO_TEST_CASE(train_dashboard_shows_its_embedded_cluster_and_curves_that_grow) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  const std::string experiment = home.file("long.yaml");
  dtrain::testing::write_file(
      experiment, "name: long\n"
                  "operator: linear_regression\n"
                  "hyperparameters: {lr: 0.01, samples: 20000, features: 4, optimizer: sgd}\n"
                  "resources: {slots_per_trial: 1}\n"
                  "global_batch_size: 32\n"
                  "epochs: 100000\n");
  child_process train({DTRAIN_BINARY, "train", experiment, "--embedded", "--dashboard",
                       "--dashboard-file", home.file("dashboard.url")},
                      home.file("train.log"));
  const std::string url =
      trimmed(dtrain::testing::wait_for_file(home.file("dashboard.url"), milliseconds(10000)));
  const uint16_t port = port_of(url);
  BOOST_REQUIRE_MESSAGE(port != 0, dtrain::testing::read_file(home.file("train.log")));
  const std::string token = trimmed(dtrain::testing::read_file(home.file("dashboard-token")));

  const std::string cluster = http_get(port, "/api/v1/cluster", token).body;
  BOOST_TEST(contains(cluster, "\"address\":\"in-process\""), cluster);
  // The curve gains points while the trial trains.
  const std::string path = "/api/v1/trials/1-00000/metrics";
  BOOST_TEST(contains(wait_for_body(port, path, token, "{\"epoch\":2,"), "{\"epoch\":2,"));
  const std::string later = wait_for_body(port, path + "?since=2", token, "{\"epoch\":4,");
  BOOST_TEST(contains(later, "{\"epoch\":4,"), later);
  BOOST_TEST(!contains(later, "{\"epoch\":2,"), later);
  // A running trial's label set, checked by promtool too.
  http_reply prom = http_get(port, "/metrics", token);
  BOOST_TEST(contains(prom.body, "dtrain_trial_epoch{experiment=\"1\",trial=\"00000\"} "), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_trials{state=\"running\"} 1"), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_slots{state=\"used\"} 1"), prom.body);
  BOOST_TEST(promtool_complaints(home, prom.body) == "", prom.body);

  // Per node and per trial: the node's replica and its process's memory
  // (the head asks every 2 s), the trial's speed.
  for (int i = 0; i < 100 && !contains(prom.body, "dtrain_node_resident_memory_bytes{"); ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    prom = http_get(port, "/metrics", token);
  }
  const std::string node = "{node=\"0\",address=\"in-process\"}";
  BOOST_TEST(contains(prom.body, "dtrain_node_replicas" + node + " 1"), prom.body);
  BOOST_TEST(contains(prom.body, "dtrain_node_slots_used" + node + " 1"), prom.body);
  BOOST_TEST(sample_value(prom.body, "dtrain_node_resident_memory_bytes" + node) > 1e6, prom.body);
  const std::string trial = "{experiment=\"1\",trial=\"00000\"}";
  BOOST_TEST(sample_value(prom.body, "dtrain_trial_step_seconds" + trial) > 0, prom.body);
  BOOST_TEST(sample_value(prom.body, "dtrain_trial_allreduce_seconds" + trial) >= 0, prom.body);
  BOOST_TEST(sample_value(prom.body, "dtrain_trial_restarts" + trial) == 0, prom.body);
  BOOST_TEST(contains(prom.body, "\ndtrain_trial_restarts_total 0\n"), prom.body);
  BOOST_TEST(promtool_complaints(home, prom.body) == "", prom.body);

  // The samples/s /metrics shows is the trainer's own figure for the epoch
  // it shows: the stored report's and the epoch line's, within 10%.
  const double epoch = sample_value(prom.body, "dtrain_trial_epoch" + trial);
  const double rate = sample_value(prom.body, "dtrain_trial_samples_per_second" + trial);
  BOOST_TEST_MESSAGE("/metrics: epoch " << epoch << ", " << rate << " samples/s");
  BOOST_TEST_REQUIRE(epoch >= 1);
  BOOST_TEST(rate > 0, prom.body);
  const auto e = static_cast<int64_t>(epoch);
  const std::string stored = http_get(port, path + "?since=" + std::to_string(e - 1), token).body;
  const double own = reported(stored, e, "samples_per_second");
  BOOST_TEST(std::fabs(rate - own) <= 0.1 * own, "stored " << own << " vs /metrics " << rate
                                                            << "\n" << stored);
  // stdout goes to a file: the epoch line may still sit in its buffer.
  std::string log;
  for (int i = 0; i < 100 && std::isnan(epoch_line_rate(log, e)); ++i) {
    log = dtrain::testing::read_file(home.file("train.log"));
    if (std::isnan(epoch_line_rate(log, e)))
      std::this_thread::sleep_for(milliseconds(100));
  }
  const double line = epoch_line_rate(log, e);
  if (std::isnan(line))
    BOOST_TEST_MESSAGE("no epoch line for epoch " << e << " in the log yet (buffered)");
  else
    BOOST_TEST(std::fabs(rate - line) <= 0.1 * line, "epoch line " << line << " vs " << rate);

  BOOST_TEST(train.stop(SIGINT, milliseconds(30000)),
             dtrain::testing::read_file(home.file("train.log")));
  BOOST_TEST(http_get(port, "/").status == -1);
}

BOOST_AUTO_TEST_SUITE_END()
