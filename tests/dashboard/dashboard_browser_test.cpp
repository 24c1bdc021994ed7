// The dashboard in a real browser: a head with its dashboard, a node of two
// slots and a sweep running through them (all on loopback), watched by
// tests/browser/dashboard.spec.js in Debian's headless Chromium through
// playwright-core (tools/install-deps.sh installs both). The script checks
// the cluster view (the node alive), the trial table, a curve that grows
// while its trial trains, the trial's checkpoints view, the node's log in
// the log view, the importance section, the running sweep compared with an
// earlier two-objective one (stored before the head started), that one's
// Pareto set, and a console without errors, and writes a screenshot to $DTRAIN_BROWSER_SCREENSHOT (CTest sets
// it to the build directory).
// Without chromium or node the suite says "SKIPPED (no browser: ...)",
// which CTest reports as skipped.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "dtrain/experiments/store.hpp"
#include "support/child_process.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// The first executable `name` on $PATH ("" if none).
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

// Why the browser test cannot run here, or "" when it can.
std::string missing_browser(const std::string& chromium, const std::string& node) {
  if (::access(chromium.c_str(), X_OK) != 0)
    return chromium + " not found (Debian package chromium: tools/install-deps.sh as root)";
  if (node.empty())
    return "node not found on PATH (Debian package nodejs: tools/install-deps.sh as root)";
  return "";
}

// Chromium's process group, should node.js have left it running: the
// script writes the pid (playwright starts Chromium as a group leader).
// Checked against /proc first, so a reused pid is left alone.
void kill_browser(const std::string& pid_text) {
  const pid_t pid = static_cast<pid_t>(std::atoi(pid_text.c_str()));
  if (pid <= 1)
    return;
  const std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  if (cmdline.find("chrom") == std::string::npos)
    return;
  BOOST_TEST_MESSAGE("Chromium (pid " << pid << ") outlived its script: killing its group");
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

// A random search over lr: four trials of linear regression, two at a time
// on the node's two slots, each epoch long enough (a million samples, about
// 0.4 s here) and with epochs enough (1000) that the first trials still run
// while the page watches, on a machine ten times faster too; the test stops
// the sweep when the page is done.
std::string sweep_experiment(const temp_dir& dir) {
  const std::string path = dir.file("sweep.yaml");
  dtrain::testing::write_file(
      path, "name: browser-sweep\n"
            "operator: linear_regression\n"
            "hyperparameters:\n"
            "  samples: 1000000\n"
            "  features: 16\n"
            "  optimizer: sgd\n"
            "  lr: {type: log, base: 10, minval: -3, maxval: -1.5}\n"
            "searcher:\n"
            "  name: random\n"
            "  metric: validation_loss\n"
            "  smaller_is_better: true\n"
            "  max_trials: 4\n"
            "  max_concurrent_trials: 2\n"
            "  max_length: {epochs: 1000}\n"
            "resources: {slots_per_trial: 1}\n"
            "global_batch_size: 256\n"
            "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n");
  return path;
}

// A finished two-objective sweep of an earlier day in the store the head
// will open: four trials reporting validation_loss and loss for three
// epochs, three of them on the Pareto front at their last epoch, so the
// page has two experiments to compare and a Pareto set to draw.
void store_an_earlier_sweep(const temp_dir& home) {
  auto opened = dtrain::experiments::open_sqlite_store(home.file("experiments.db"));
  BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
  auto& s = **opened;
  dtrain::experiments::experiment_row e;
  e.name = "earlier-sweep";
  e.kind = "tune";
  e.configuration = "name: earlier-sweep\n"
                    "operator: linear_regression\n"
                    "global_batch_size: 32\n"
                    "hyperparameters:\n"
                    "  lr: {type: log, base: 10, minval: -3, maxval: -1}\n"
                    "searcher:\n"
                    "  name: random\n"
                    "  metrics: [{name: validation_loss, mode: min}, {name: loss, mode: min}]\n"
                    "  max_trials: 4\n"
                    "  max_length: {epochs: 3}\n";
  e.config_hash = "00000000000000ab";
  e.state = "completed";
  e.metric = "validation_loss";
  e.minimize = true;
  e.created_at = 1700000000;
  const int64_t id = s.create_experiment(e).value();
  const double last[4][2] = {{0.3, 0.5}, {0.4, 0.35}, {0.5, 0.2}, {0.6, 0.6}};  // the 4th dominated
  int64_t seq = 0;
  for (int i = 0; i < 4; ++i) {
    dtrain::experiments::trial_row t;
    t.experiment = id;
    t.id = "0000" + std::to_string(i + 1);
    t.seq_created = ++seq;
    t.hyperparameters = "{\"lr\": 0.0" + std::to_string(i + 1) + "}";
    t.state = "TERMINATED";
    t.end_how = "completed";
    t.epochs = 3;
    t.best = t.last = last[i][0];
    BOOST_REQUIRE(s.put_trial(t).is_ok());
    for (int epoch = 1; epoch <= 3; ++epoch)
      for (int k = 0; k < 2; ++k) {
        dtrain::experiments::metric_row m;
        m.experiment = id;
        m.trial = t.id;
        m.epoch = epoch;
        m.name = k == 0 ? "validation_loss" : "loss";
        m.value = last[i][k] + 0.2 * (3 - epoch);
        m.seq = ++seq;
        BOOST_REQUIRE(s.add_metrics({m}).is_ok());
      }
  }
  BOOST_REQUIRE(s.flush().is_ok());
}

// What tests/browser/dashboard.spec.js is given.
struct page_script {
  std::string node;         // the node.js binary
  std::string chromium;     // the browser
  std::string url;          // the page, with ?token=
  std::string node_address; // the node the cluster view must list
  std::string node_log_text; // in a line of that node's log
  std::string screenshot;   // where the PNG goes
};

// Runs the script (4 minutes at most) with playwright-core from
// tools/browser; its exit code (-1 if it timed out) and its output in `log`.
// Chromium is gone afterwards, whatever became of the script.
int run_page_script(const page_script& s, const temp_dir& home, std::string& log) {
  setenv("DTRAIN_DASHBOARD_URL", s.url.c_str(), 1);
  setenv("DTRAIN_NODE_ADDRESS", s.node_address.c_str(), 1);
  setenv("DTRAIN_NODE_LOG_TEXT", s.node_log_text.c_str(), 1);
  setenv("DTRAIN_SCREENSHOT", s.screenshot.c_str(), 1);
  setenv("DTRAIN_CHROMIUM", s.chromium.c_str(), 1);
  setenv("DTRAIN_BROWSER_PID_FILE", home.file("chromium.pid").c_str(), 1);
  setenv("NODE_PATH", DTRAIN_SOURCE_DIR "/tools/browser/node_modules", 1);
  ::unlink(s.screenshot.c_str());
  child_process page({s.node, DTRAIN_SOURCE_DIR "/tests/browser/dashboard.spec.js"},
                     home.file("page.log"));
  const int code = page.wait(milliseconds(240000));
  if (code == -1)  // timed out: SIGTERM lets playwright close its Chromium first
    page.stop(SIGTERM, milliseconds(10000));
  kill_browser(read_file(home.file("chromium.pid")));
  log = read_file(home.file("page.log"));
  return code;
}

} // namespace

BOOST_AUTO_TEST_SUITE(dashboard_browser)

BOOST_AUTO_TEST_CASE(the_page_shows_the_cluster_the_trials_and_curves_that_grow_without_errors) {
  const char* chromium_env = std::getenv("DTRAIN_CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  const std::string node_js = on_path("node");
  const std::string why = missing_browser(chromium, node_js);
  if (!why.empty()) {
    BOOST_TEST_MESSAGE("SKIPPED (no browser: " << why << ")");
    return;
  }
  if (::access(DTRAIN_SOURCE_DIR "/tools/browser/node_modules/playwright-core/package.json", R_OK) != 0)
    BOOST_FAIL("playwright-core not found in " DTRAIN_SOURCE_DIR
               "/tools/browser/node_modules: run tools/install-deps.sh");

  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  store_an_earlier_sweep(home);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address"), "--dashboard-port", "0", "--dashboard-file",
                      home.file("dashboard.url")},
                     home.file("head.log"));
  const std::string address =
      trimmed(dtrain::testing::wait_for_file(home.file("head.address"), milliseconds(10000)));
  BOOST_REQUIRE_MESSAGE(!address.empty(), read_file(home.file("head.log")));
  const std::string url =
      trimmed(dtrain::testing::wait_for_file(home.file("dashboard.url"), milliseconds(5000)));
  BOOST_REQUIRE_MESSAGE(url.rfind("http://127.0.0.1:", 0) == 0, "dashboard URL: " << url);
  const std::string token = trimmed(read_file(home.file("dashboard-token")));
  child_process node({DTRAIN_BINARY, "start", "--address", address, "--slots", "2", "--port-file",
                      home.file("node.address")},
                     home.file("node.log"));
  const std::string node_address =
      trimmed(dtrain::testing::wait_for_file(home.file("node.address"), milliseconds(10000)));
  BOOST_REQUIRE_MESSAGE(!node_address.empty(), read_file(home.file("node.log")));

  child_process tune({DTRAIN_BINARY, "tune", sweep_experiment(home), "--address", address},
                     home.file("tune.log"));

  const char* shot = std::getenv("DTRAIN_BROWSER_SCREENSHOT");
  // The node prints "dtrain node 0 joined HEAD: ..." to its terminal and
  // its log file ($DTRAIN_HOME/node-PID.log), which the log view reads.
  const std::string joined = "dtrain node 0 joined " + address;
  for (int i = 0; i < 50 && read_file(home.file("node.log")).find(joined) == std::string::npos; ++i)
    std::this_thread::sleep_for(milliseconds(100));
  BOOST_REQUIRE_MESSAGE(read_file(home.file("node.log")).find(joined) != std::string::npos,
                        read_file(home.file("node.log")));
  const page_script script{node_js, chromium, url + "?token=" + token, node_address, joined,
                           shot ? shot : home.file("dashboard.png")};
  std::string log;
  const int code = run_page_script(script, home, log);
  BOOST_TEST_MESSAGE(log);
  BOOST_TEST(code == 0, log << "\n--- tune ---\n" << read_file(home.file("tune.log"))
                            << "\n--- head ---\n" << read_file(home.file("head.log")));
  BOOST_TEST(::access(script.screenshot.c_str(), R_OK) == 0, "no screenshot at " << script.screenshot);
  BOOST_TEST_MESSAGE("screenshot: " << script.screenshot);

  // The sweep is not needed any more: stop it (as Ctrl-C would), then the
  // node and the head; each child_process kills what is left by its pid.
  BOOST_TEST(tune.stop(SIGINT, milliseconds(30000)), read_file(home.file("tune.log")));
  BOOST_TEST(node.stop(SIGTERM, milliseconds(10000)));
  BOOST_TEST(head.stop(SIGTERM, milliseconds(10000)));
}

BOOST_AUTO_TEST_SUITE_END()
