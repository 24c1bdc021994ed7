// A head killed with -9 and started again at the same address, its store
// reopened from disk: the node processes keep their replicas running, join
// the new head within their reconnect window and report what they host,
// so that it lists every node again with the slots in use and the running
// trainer's placement; the training goes on meanwhile (the data plane is
// replica to replica and driver to replica) and ends as an uninterrupted
// run does; the driver attaches to the new head when it next needs it.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "support/child_process.hpp"
#include "support/loopback_cluster.hpp"
#include "support/trainer_runs.hpp"
#include "support/test_util.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/store.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::status_of;
using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

trainer_config small_mlp(const std::string& checkpoints) {
  trainer_config t;
  t.name = "head-restart";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "64"}, {"epochs", "3"}, {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 2;
  t.global_batch_size = 128;
  t.seed = 11;
  t.collective_timeout = milliseconds(20000);
  t.placement_timeout = milliseconds(20000);
  t.checkpoint_dir = checkpoints;
  return t;
}

bool eventually(const std::function<bool()>& what, milliseconds limit) {
  const auto end = clock_type::now() + limit;
  for (;;) {
    if (what())
      return true;
    if (clock_type::now() >= end)
      return false;
    std::this_thread::sleep_for(milliseconds(200));
  }
}

std::string port_of(const std::string& address) { return address.substr(address.rfind(':') + 1); }

} // namespace

BOOST_AUTO_TEST_SUITE(head_restart)

BOOST_AUTO_TEST_CASE(a_head_killed_during_epoch_2_and_restarted_at_its_address_gets_its_nodes_back) {
  setenv("DTRAIN_RECONNECT_WINDOW_S", "30", 1);  // the nodes inherit it
  loopback_cluster lc(2);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  double reference = 0;
  {
    dtrain::testing::temp_dir ckpt;
    auto t = trainer::create(*c, small_mlp(ckpt.path())).value();
    for (int e = 0; e < 3; ++e)
      BOOST_REQUIRE(t->train().is_ok());
    reference = t->validate().value().accuracy;
    BOOST_REQUIRE(t->shutdown().is_ok());
  }
  // The experiment's record, begun before the kill, in the head's store.
  experiments::experiment_row row;
  row.name = "head-restart";
  row.kind = "train";
  auto id = c->experiments().value()->create_experiment(row);
  BOOST_REQUIRE_MESSAGE(id.is_ok(), id.error().to_string());
  dtrain::testing::temp_dir ckpt;
  auto t = trainer::create(*c, small_mlp(ckpt.path())).value();
  BOOST_REQUIRE(t->train().is_ok());
  auto epoch2 = t->train_async();
  std::this_thread::sleep_for(milliseconds(300));
  BOOST_REQUIRE(lc.head->stop(SIGKILL, milliseconds(2000)));
  std::this_thread::sleep_for(milliseconds(5000));
  // The same address, the same store (DTRAIN_HOME's, as before).
  lc.head = std::make_unique<child_process>(
      std::vector<std::string>{DTRAIN_BINARY, "start", "--head", "--port", port_of(lc.address),
                               "--port-file", lc.home.file("head2.address")},
      lc.home.file("head2.log"));
  const std::string again = dtrain::testing::wait_for_file(lc.home.file("head2.address"),
                                                           milliseconds(10000));
  BOOST_REQUIRE_MESSAGE(again.rfind(lc.address, 0) == 0, "restarted at '" << again << "'");
  auto m2 = epoch2.get();
  BOOST_REQUIRE_MESSAGE(m2.is_ok(), m2.error().to_string());
  BOOST_TEST(m2->epoch == 2);
  BOOST_TEST(t->failures().empty());
  auto m3 = t->train();
  BOOST_REQUIRE_MESSAGE(m3.is_ok(), m3.error().to_string());
  const double accuracy = t->validate().value().accuracy;
  BOOST_TEST_MESSAGE("accuracy " << accuracy << " vs uninterrupted " << reference);
  BOOST_TEST(accuracy == reference);  // the head restart touched no replica

  // Every node is back, with the trainer's placement rebuilt from what they
  // report: both slots in use.
  BOOST_TEST(eventually([&] { return status_of(*c).nodes.size() == 2u; }, milliseconds(15000)));
  const cluster_status st = status_of(*c);
  BOOST_TEST(st.nodes.size() == 2u);
  BOOST_TEST(st.slots_used == (std::vector<int32_t>{1, 1}), "slots in use");
  BOOST_REQUIRE(st.trainers.size() == 1u);
  BOOST_TEST(st.trainers[0].find(": 2 replicas") != std::string::npos, st.trainers[0]);
  for (size_t i = 0; i < lc.nodes.size(); ++i) {
    BOOST_TEST(lc.nodes[i]->running());
    const std::string log = dtrain::testing::read_file(lc.home.file("node" + std::to_string(i) + ".log"));
    BOOST_TEST(log.find("joined " + lc.address + " again") != std::string::npos, log);
  }
  // The record goes on at the restarted head (the store reopened from
  // disk; the driver attached to the new head's store service).
  auto store = c->experiments();
  BOOST_REQUIRE_MESSAGE(store.is_ok(), store.error().to_string());
  row.id = *id;
  row.state = "completed";
  BOOST_REQUIRE((*store)->update_experiment(row).is_ok());
  BOOST_REQUIRE_MESSAGE((*store)->flush().is_ok(), "writes after the restart");
  auto kept = (*store)->experiment(*id);
  BOOST_REQUIRE_MESSAGE(kept.is_ok(), kept.error().to_string());
  BOOST_TEST(kept->name == "head-restart");
  BOOST_TEST(kept->state == "completed");
  // The driver's release reaches the new head: the slots are free again.
  BOOST_REQUIRE(t->shutdown().is_ok());
  BOOST_TEST(eventually([&] {
               auto s = status_of(*c);
               return s.trainers.empty() && s.slots_used == std::vector<int32_t>{0, 0};
             }, milliseconds(5000)));
  lc.stop_all(milliseconds(10000));
}

BOOST_AUTO_TEST_CASE(a_node_whose_head_stays_away_stops_after_its_reconnect_window) {
  setenv("DTRAIN_RECONNECT_WINDOW_S", "2", 1);
  loopback_cluster lc(1);
  const auto killed = clock_type::now();
  BOOST_REQUIRE(lc.head->stop(SIGKILL, milliseconds(2000)));
  const int code = lc.nodes[0]->wait(milliseconds(15000));
  const auto took = std::chrono::duration_cast<milliseconds>(clock_type::now() - killed);
  BOOST_TEST(code == 0);
  BOOST_TEST_MESSAGE("the node stopped " << took.count() << " ms after the head was killed");
  BOOST_TEST((took >= milliseconds(2000)));
  BOOST_TEST((took < milliseconds(10000)));
  const std::string log = dtrain::testing::read_file(lc.home.file("node0.log"));
  BOOST_TEST(log.find("within its reconnect window of 2 s") != std::string::npos, log);
}

BOOST_AUTO_TEST_SUITE_END()
