// Live recovery with real node processes on loopback: a node of a
// three-replica group killed (-9) or stopped (SIGSTOP) mid-epoch. The
// survivors go on from their last committed step without any checkpoint
// (the trainer has no checkpoint directory at all), a replacement node
// joins at a step boundary and receives the group's state, bit for bit,
// and the run ends with the accuracy of a run without failures.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "dtrain/driver/trainer.hpp"
#include "support/loopback_cluster.hpp"
#include "support/trainer_runs.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using dtrain::testing::train_to_end;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int64_t epochs = 3;

trainer_config three_replicas() {
  trainer_config t;
  t.name = "live";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "128"}, {"epochs", std::to_string(epochs)},
              {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 3;
  t.min_replicas = 2;
  t.global_batch_size = 128;
  t.seed = 5;
  t.collective_timeout = milliseconds(30000);
  t.placement_timeout = milliseconds(20000);
  t.max_failures = 2;
  t.recovery = "live";
  return t;
}

double fault_free_accuracy() {
  static double accuracy = -1;
  if (accuracy < 0) {
    loopback_cluster lc(3);
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
    auto t = trainer::create(*c, three_replicas()).value();
    accuracy = train_to_end(*t, epochs);
    BOOST_TEST_MESSAGE("fault-free accuracy " << accuracy);
    BOOST_REQUIRE(t->shutdown().is_ok());
    lc.stop_all(milliseconds(5000));
  }
  return accuracy;
}

// The chief's progress, (epoch, steps done) in the order it came.
struct progress_log {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> seen;
  std::vector<std::string> events;

  void listen(trainer_config& cfg) {
    cfg.progress_seconds = 0.02;
    cfg.on_progress = [this](const train::step_progress& p) {
      std::lock_guard<std::mutex> lock(mutex);
      seen.emplace_back(p.epoch, p.step);
    };
    cfg.on_event = [this](const trainer_event& e) {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(e.kind + "@" + std::to_string(e.epoch) + ": " + e.message);
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen.size();
  }
  // The first report that went back, or none.
  std::optional<std::string> went_back() {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = 1; i < seen.size(); ++i)
      if (seen[i] < seen[i - 1])
        return "(" + std::to_string(seen[i - 1].first) + ", " + std::to_string(seen[i - 1].second) +
               ") then (" + std::to_string(seen[i].first) + ", " + std::to_string(seen[i].second) + ")";
    return std::nullopt;
  }
  bool has(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& e : events) {
      BOOST_TEST_MESSAGE("event " << e);
      if (e.rfind(prefix, 0) == 0)
        return true;
    }
    return false;
  }
};

// Three nodes for three replicas; hits the node of replica `victim_rank`
// with `sig` in epoch 2, adds a replacement node a little later, and
// checks the recovery.
void fail_a_node_live(int sig, int victim_rank) {
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);  // every process of the cluster
  const double reference = fault_free_accuracy();
  loopback_cluster lc(3);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto cfg = three_replicas();
  progress_log log;
  log.listen(cfg);
  auto t = trainer::create(*c, cfg).value();
  BOOST_REQUIRE(t->train().is_ok());  // epoch 1
  auto victim = lc.node_at(t->placement()[static_cast<size_t>(victim_rank)].info.address);
  BOOST_REQUIRE(victim != nullptr);
  const std::vector<std::string> before_caps = t->replica_capabilities();
  auto epoch2 = t->train_async();
  const size_t before = log.count();
  for (int i = 0; i < 200 && log.count() < before + 10; ++i)  // well inside epoch 2
    std::this_thread::sleep_for(milliseconds(20));
  kill(victim->pid(), sig);
  std::thread returning([&] {
    std::this_thread::sleep_for(milliseconds(sig == SIGSTOP ? 4000 : 1000));
    if (sig == SIGSTOP)
      kill(victim->pid(), SIGKILL);  // its slot would stay held otherwise
    lc.add_node();
  });
  auto m = epoch2.get();
  returning.join();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 2);  // the epoch went on: not redone from a checkpoint
  BOOST_REQUIRE(t->failures().size() == 1u);
  BOOST_TEST_MESSAGE("failure: " << t->failures()[0].cause);
  // The replacement has registered: the next epoch boundary (past the
  // trainer's once-a-second growth check) takes it in, if a step boundary
  // of epoch 2 did not already.
  std::this_thread::sleep_for(milliseconds(1100));
  double accuracy = 0;
  for (int64_t done = m->epoch; done < epochs;) {
    auto next = t->train();
    BOOST_REQUIRE_MESSAGE(next.is_ok(), next.error().to_string());
    done = next->epoch;
  }
  accuracy = t->validate().value().accuracy;
  // The replacement joined and holds the survivors' parameters bit for bit.
  BOOST_TEST(t->world_size() == 3);
  auto hashes = t->parameter_hashes().value();
  BOOST_REQUIRE(hashes.size() == 3u);
  BOOST_TEST(hashes[0] == hashes[1]);
  BOOST_TEST(hashes[0] == hashes[2]);
  // The survivors kept their capabilities (in rank order), the lost
  // replica's opens nothing now, and the replacement has one of its own.
  const std::vector<std::string> after_caps = t->replica_capabilities();
  std::vector<std::string> kept;
  for (size_t r = 0; r < before_caps.size(); ++r)
    if (static_cast<int>(r) != victim_rank)
      kept.push_back(before_caps[r]);
  BOOST_TEST(after_caps[0] == kept[0]);
  BOOST_TEST(after_caps[1] == kept[1]);
  for (const std::string& old : before_caps)
    BOOST_TEST(after_caps[2] != old);
  auto back = log.went_back();
  BOOST_TEST(!back.has_value(), "the chief's step went back: " << back.value_or(""));
  BOOST_TEST(log.has("shrank@2"));
  BOOST_TEST(log.has("recovered@2: running again with 2 of 3 replicas (generation 1) live"));
  BOOST_TEST(log.has("transfer@"));
  BOOST_TEST(log.has("grew@"));
  BOOST_TEST_MESSAGE("accuracy after live recovery " << accuracy << " vs " << reference);
  BOOST_TEST(std::fabs(accuracy - reference) <= 0.003);
  BOOST_REQUIRE(t->shutdown().is_ok());
  lc.stop_all(milliseconds(5000));
}

} // namespace

BOOST_AUTO_TEST_SUITE(live_recovery)

BOOST_AUTO_TEST_CASE(a_node_killed_under_three_replicas_costs_no_checkpoint_and_a_replacement_joins) {
  fail_a_node_live(SIGKILL, 1);
}

BOOST_AUTO_TEST_CASE(the_chief_killed_hands_its_place_to_a_survivor) {
  fail_a_node_live(SIGKILL, 0);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_is_left_behind_through_heartbeats) {
  fail_a_node_live(SIGSTOP, 2);
}

BOOST_AUTO_TEST_SUITE_END()
