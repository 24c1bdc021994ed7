// Commands without --address find the cluster started on this host, as
// `ray status` does: $DTRAIN_ADDRESS, else the head recorded in
// DTRAIN_HOME; none, a stale record or two heads give errors that say so
// (the order itself: tests/roles/cluster_address_test.cpp).
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/dtrain_command.hpp"
#include "support/loopback_cluster.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
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

BOOST_AUTO_TEST_SUITE(cluster_discovery)

BOOST_AUTO_TEST_CASE(status_and_train_find_the_head_started_on_this_host) {
  unsetenv("DTRAIN_ADDRESS");
  loopback_cluster lc(1);  // sets DTRAIN_HOME to its own directory
  temp_dir dir;
  ran status = run_dtrain({"status"}, dir.file("status.log"));
  BOOST_TEST(status.code == 0, status.log);
  BOOST_TEST(contains(status.log, "cluster at " + lc.address + ": 1 nodes"), status.log);

  const std::string experiment = dtrain::testing::regression_experiment(dir);
  ran attached = run_dtrain({"train", experiment}, dir.file("train.log"));
  BOOST_TEST(attached.code == 0, attached.log);
  BOOST_TEST(contains(attached.log, "attaching to the cluster started on this host at " +
                                        lc.address),
             attached.log);
  ran embedded = run_dtrain({"train", experiment, "--embedded"}, dir.file("embedded.log"));
  BOOST_TEST(embedded.code == 0, embedded.log);
  BOOST_TEST(!contains(embedded.log, "attaching"), embedded.log);

  // $DTRAIN_ADDRESS wins over the record, and names what it could not reach.
  setenv("DTRAIN_ADDRESS", "127.0.0.1:1", 1);
  ran elsewhere = run_dtrain({"status"}, dir.file("elsewhere.log"));
  unsetenv("DTRAIN_ADDRESS");
  BOOST_TEST(elsewhere.code != 0, elsewhere.log);
  BOOST_TEST(contains(elsewhere.log, "127.0.0.1:1"), elsewhere.log);
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_CASE(no_head_a_stale_record_and_two_heads_are_named) {
  unsetenv("DTRAIN_ADDRESS");
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  ran none = run_dtrain({"status"}, home.file("none.log"));
  BOOST_TEST(none.code != 0, none.log);
  BOOST_TEST(contains(none.log, "no dtrain cluster runs on this host"), none.log);
  BOOST_TEST(contains(none.log, "dtrain start --head"), none.log);

  // A head's record whose pid is now another program is stale: for a
  // command that needs a cluster, an error naming the file, and nothing
  // is signalled.
  child_process sleeper({"/bin/sleep", "60"}, home.file("sleep.log"));
  std::ofstream(home.file("head-5000.pid"))
      << sleeper.pid() << " 1\n127.0.0.1:5000\n";
  ran stale = run_dtrain({"status"}, home.file("stale.log"));
  BOOST_TEST(stale.code != 0, stale.log);
  BOOST_TEST(contains(stale.log, home.file("head-5000.pid") + " (127.0.0.1:5000) is stale"),
             stale.log);
  BOOST_TEST(contains(stale.log, "dtrain stop"), stale.log);
  BOOST_TEST(sleeper.running());
  // A command that goes on without a cluster passes the stale record over,
  // saying so, and goes on as with no head (here: to the local store file,
  // which does not exist yet), instead of failing until `dtrain stop`.
  ran listed = run_dtrain({"experiments", "list"}, home.file("list.log"));
  BOOST_TEST(contains(listed.log, "dtrain: passing over the head record " +
                                      home.file("head-5000.pid")),
             listed.log);
  BOOST_TEST(contains(listed.log, "experiments.db"), listed.log);
  BOOST_TEST(sleeper.running());
  std::remove(home.file("head-5000.pid").c_str());

  std::vector<std::unique_ptr<child_process>> heads;
  for (const char* name : {"a", "b"}) {
    heads.push_back(std::make_unique<child_process>(
        std::vector<std::string>{DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                                 home.file(std::string(name) + ".address")},
        home.file(std::string(name) + ".log")));
    BOOST_REQUIRE(!dtrain::testing::wait_for_file(home.file(std::string(name) + ".address"),
                                                  milliseconds(10000))
                       .empty());
  }
  ran two = run_dtrain({"status"}, home.file("two.log"));
  BOOST_TEST(two.code != 0, two.log);
  BOOST_TEST(contains(two.log, "several dtrain heads run on this host"), two.log);
  BOOST_TEST(contains(two.log, "--address"), two.log);
  for (auto& head : heads)
    BOOST_TEST(head->stop(SIGTERM, milliseconds(5000)));
  BOOST_TEST(sleeper.stop(SIGKILL, milliseconds(2000)));
}

BOOST_AUTO_TEST_SUITE_END()
