// `dtrain logs` against a loopback head and node started with the dtrain
// command line: the node serves its own log through the cluster.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "support/dtrain_command.hpp"
#include "support/loopback_cluster.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

using ran = dtrain::testing::command_result;

ran run_dtrain(const std::vector<std::string>& args, const std::string& log_path) {
  return dtrain::testing::run_dtrain(args, log_path, milliseconds(120000));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(logs_command)

BOOST_AUTO_TEST_CASE(a_node_serves_what_it_printed_filtered_and_followed) {
  unsetenv("DTRAIN_ADDRESS");
  loopback_cluster lc(1);  // DTRAIN_HOME: its own directory, where `logs` finds the head
  temp_dir dir;
  const std::string experiment = dtrain::testing::regression_experiment(dir);
  ran train = run_dtrain({"train", experiment}, dir.file("train.log"));
  BOOST_REQUIRE_MESSAGE(train.code == 0, train.log);

  // The foreground node still prints to its terminal (here, its log file).
  BOOST_TEST(contains(read_file(lc.home.file("node0.log")), "dtrain node 0 joined"));

  ran all = run_dtrain({"logs", "--node", "0"}, dir.file("all.log"));
  BOOST_TEST(all.code == 0);
  BOOST_TEST(contains(all.log, "dtrain node 0 joined " + lc.address), all.log);
  BOOST_TEST(contains(all.log, "log " + lc.home.path() + "/node-"), all.log);

  ran matching = run_dtrain({"logs", "--node", "0", "--grep", "CPU slots"}, dir.file("grep.log"));
  BOOST_TEST(matching.code == 0);
  BOOST_TEST(contains(matching.log, "dtrain node 0 joined"), matching.log);
  ran none = run_dtrain({"logs", "--node", "0", "--grep", "no line has this"}, dir.file("none.log"));
  BOOST_TEST(none.code == 0);
  BOOST_TEST(none.log.empty(), none.log);

  ran tail = run_dtrain({"logs", "--node", "0", "--tail", "1", "--grep", "joined"},
                        dir.file("tail.log"));
  BOOST_TEST(tail.code == 0);
  BOOST_TEST(contains(tail.log, "dtrain node 0 joined"), tail.log);

  ran unknown = run_dtrain({"logs", "--node", "7"}, dir.file("unknown.log"));
  BOOST_TEST(unknown.code == 1);
  BOOST_TEST(contains(unknown.log, "no node 7"), unknown.log);
  BOOST_TEST(contains(unknown.log, "1 live nodes (0 to 0)"), unknown.log);

  ran no_trial = run_dtrain({"logs", "--trial", "00042"}, dir.file("trial.log"));
  BOOST_TEST(no_trial.code == 1);
  BOOST_TEST(contains(no_trial.log, "holds trial 00042"), no_trial.log);

  // --follow prints what is there, then waits for more until SIGTERM.
  const std::string follow_log = dir.file("follow.log");
  child_process follow({DTRAIN_BINARY, "logs", "--node", "0", "--follow"}, follow_log,
                       "/dev/null");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!contains(read_file(follow_log), "joined") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(50));
  BOOST_TEST(contains(read_file(follow_log), "dtrain node 0 joined"));
  std::this_thread::sleep_for(milliseconds(700));  // a poll or two
  BOOST_TEST(follow.running());
  auto stopped_at = std::chrono::steady_clock::now();
  BOOST_TEST(follow.stop(SIGTERM, milliseconds(5000)));
  BOOST_TEST(follow.wait(milliseconds(0)) == 0);
  BOOST_TEST_MESSAGE("--follow stopped in "
                     << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() -
                                                                 stopped_at).count()
                     << " ms");

  // --trial: the nodes holding a running trainer's replicas, named as
  // `dtrain status` lists the trainer.
  const std::string long_run = dir.file("long.yaml");
  dtrain::testing::write_file(
      long_run, "name: long\n"
                "operator: linear_regression\n"
                "hyperparameters: {lr: 0.01, samples: 20000, features: 4, optimizer: sgd}\n"
                "resources: {slots_per_trial: 1}\n"
                "global_batch_size: 32\n"
                "epochs: 10000\n"
                "checkpoint_storage: {host_path: " + dir.file("ckpt-long") + "}\n");
  child_process driver({DTRAIN_BINARY, "train", long_run}, dir.file("long.log"), "/dev/null");
  std::string trainer;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (trainer.empty() && driver.running() && std::chrono::steady_clock::now() < deadline) {
    ran status = run_dtrain({"status"}, dir.file("status.log"));
    const size_t at = status.log.find("  long-");
    if (at != std::string::npos)
      trainer = status.log.substr(at + 2, status.log.find(": ", at) - at - 2);
    else
      std::this_thread::sleep_for(milliseconds(200));
  }
  BOOST_REQUIRE_MESSAGE(!trainer.empty(), read_file(dir.file("long.log")));
  ran by_trial = run_dtrain({"logs", "--trial", trainer, "--grep", "joined"}, dir.file("bytrial.log"));
  BOOST_TEST(by_trial.code == 0);
  BOOST_TEST(contains(by_trial.log, "dtrain node 0 joined"), by_trial.log);
  BOOST_TEST(driver.stop(SIGTERM, milliseconds(20000)));
  lc.stop_all(milliseconds(5000));
}

// A node that hangs (SIGSTOP) while `dtrain logs --follow` reads it: the
// command ends within its timeouts, and its error says which of the two
// causes it was (node_logs.cpp: the connection to the node's process was
// closed by a heartbeat timeout, or it stayed up and the node did not
// answer), not a bare "no answer within the timeout".
BOOST_AUTO_TEST_CASE(a_read_of_a_node_that_hangs_says_its_connection_is_gone) {
  unsetenv("DTRAIN_ADDRESS");
  loopback_cluster lc(1);
  temp_dir dir;
  const std::string follow_log = dir.file("follow.log");
  child_process follow({DTRAIN_BINARY, "logs", "--node", "0", "--follow"}, follow_log, "/dev/null");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!contains(read_file(follow_log), "joined") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(50));
  BOOST_REQUIRE(contains(read_file(follow_log), "dtrain node 0 joined"));
  const pid_t node = lc.nodes[0]->pid();
  BOOST_REQUIRE(kill(node, SIGSTOP) == 0);
  const int code = follow.wait(milliseconds(40000));
  kill(node, SIGCONT);
  BOOST_TEST(code == 1);
  const std::string out = read_file(follow_log);
  BOOST_TEST(contains(out, "reading the log of node 0"), out);
  BOOST_TEST(contains(out, "the connection to the node's process is gone"), out);
  lc.stop_all(milliseconds(5000));
}

// A node whose process pauses (SIGSTOP for 2 s) while `dtrain logs`
// connects to it: CAF 0.17.6 drops a new outgoing connection at the first
// heartbeat tick when the peer's handshake has not arrived by then
// (cluster.cpp: retry_connection_timeouts), so the connect is tried again
// and the log is read once the node answers.
BOOST_AUTO_TEST_CASE(a_node_that_pauses_while_it_is_reached_is_read_once_it_answers) {
  unsetenv("DTRAIN_ADDRESS");
  loopback_cluster lc(1);
  temp_dir dir;
  const pid_t node = lc.nodes[0]->pid();
  BOOST_REQUIRE(kill(node, SIGSTOP) == 0);
  const std::string log = dir.file("logs.log");
  child_process logs({DTRAIN_BINARY, "logs", "--node", "0"}, log, "/dev/null");
  std::this_thread::sleep_for(milliseconds(2000));
  kill(node, SIGCONT);
  const int code = logs.wait(milliseconds(40000));
  BOOST_TEST(code == 0, read_file(log));
  BOOST_TEST(contains(read_file(log), "dtrain node 0 joined"), read_file(log));
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_SUITE_END()
