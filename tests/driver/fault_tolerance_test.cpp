// Fault tolerance with real processes on loopback: a node killed (-9) or
// stopped (SIGSTOP) in the middle of an epoch, a corrupted newest
// checkpoint, and a trainer out of retries. Each asserts the time to
// detection, that training completes (or fails naming node, rank and
// cause), and the final accuracy against a fault-free run.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "support/loopback_cluster.hpp"
#include "support/trainer_runs.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/threads.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using dtrain::testing::train_to_end;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int64_t epochs = 3;

trainer_config mlp(const std::string& checkpoints) {
  trainer_config t;
  t.name = "faulty";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "128"}, {"epochs", std::to_string(epochs)},
              {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 2;
  t.global_batch_size = 128;
  t.seed = 11;
  t.collective_timeout = milliseconds(30000);
  t.placement_timeout = milliseconds(10000);
  t.checkpoint_dir = checkpoints;
  t.max_failures = 2;
  t.recovery = "checkpoint";  // this file: checkpoint-restart (live_recovery_test.cpp: live)
  return t;
}

using config_factory = trainer_config (*)(const std::string& checkpoints);

// The same run under ZeRO stage 2: optimizer state and gradients sharded
// over the two replicas. Live recovery is asked for, but a lost replica
// took its shard with it, so the trainer restores the checkpoint.
trainer_config zero_mlp(const std::string& checkpoints) {
  trainer_config t = mlp(checkpoints);
  t.name = "faulty-zero";
  t.zero_stage = 2;
  t.recovery = "live";
  return t;
}

// And under stage 3: the parameters are sharded too.
trainer_config zero3_mlp(const std::string& checkpoints) {
  trainer_config t = zero_mlp(checkpoints);
  t.name = "faulty-zero3";
  t.zero_stage = 3;
  return t;
}

#ifdef DTRAIN_TEST_TORCH_PLUGIN
// The same run with a libtorch model (tests/plugins/torch_plugin.cpp),
// shipped to the nodes as a plugin.
trainer_config torch_mlp(const std::string& checkpoints) {
  trainer_config t = mlp(checkpoints);
  t.name = "faulty-torch";
  t.operator_name = "torch_fashion_mlp";
  t.plugins = {DTRAIN_TEST_TORCH_PLUGIN};
  t.config = {{"hidden", "128"}, {"lr", "0.02"},
              {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  return t;
}
#endif

// The fault-free run's final accuracy, once per configuration.
double fault_free_accuracy(config_factory make) {
  static std::map<config_factory, double> accuracy;
  if (accuracy.count(make) == 0) {
    loopback_cluster lc(2);
    dtrain::testing::temp_dir ckpt;
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
    auto t = trainer::create(*c, make(ckpt.path())).value();
    accuracy[make] = train_to_end(*t, epochs);
    BOOST_TEST_MESSAGE("fault-free accuracy " << accuracy[make]);
  }
  return accuracy[make];
}

// The trainer's events (trainer_config::on_event), gathered from whichever
// thread the trainer calls it on.
struct event_log {
  std::mutex mutex;
  std::vector<trainer_event> events;

  void listen(trainer_config& cfg) {
    cfg.on_event = [this](const trainer_event& e) {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(e);
    };
  }
  // "kind@epoch" of each, in order; the messages on the test log.
  std::vector<std::string> kinds() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (const auto& e : events) {
      BOOST_TEST_MESSAGE("event " << e.kind << " epoch " << e.epoch << ": " << e.message);
      out.push_back(e.kind + "@" + std::to_string(e.epoch));
    }
    return out;
  }
  const trainer_event& at(size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    return events.at(i);
  }
};

// How the group gets its second replica back after losing a node on a
// cluster with exactly as many nodes as replicas.
enum class comeback {
  elastic,       // min_replicas 1: goes on with one, grows when a node joins
  node_returns,  // not elastic: recovery waits until a new node has joined
};

// A cluster of exactly two nodes for two replicas. Starts epoch 2
// asynchronously, then hits the node of replica 1 with `sig` once the epoch
// is under way; checks the time to detection, how the group recovers, and
// the final accuracy against the fault-free run.
void fail_a_node_mid_epoch(int sig, milliseconds detect_within, comeback how,
                           config_factory make = mlp) {
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);  // every process of the cluster
  double reference = fault_free_accuracy(make);
  loopback_cluster lc(2);
  dtrain::testing::temp_dir ckpt;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto cfg = make(ckpt.path());
  cfg.min_replicas = how == comeback::elastic ? 1 : 0;
  event_log log;
  log.listen(cfg);
  auto t = trainer::create(*c, cfg).value();
  BOOST_REQUIRE(t->train().is_ok());  // epoch 1, checkpointed
  auto victim = lc.node_at(t->placement()[1].info.address);
  BOOST_REQUIRE(victim != nullptr);
  auto epoch2 = t->train_async();
  std::this_thread::sleep_for(milliseconds(300));  // well inside the epoch
  auto hit = clock_type::now();
  kill(victim->pid(), sig);
  if (sig == SIGSTOP)  // a hung node's replicas would hold their slots: end it once noticed
    std::thread([pid = victim->pid()] {
      std::this_thread::sleep_for(milliseconds(4000));
      kill(pid, SIGKILL);
    }).detach();
  std::thread returning;
  if (how == comeback::node_returns)
    returning = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(3000));
      lc.add_node();
    });
  auto m = epoch2.get();
  if (returning.joinable())
    returning.join();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_REQUIRE(t->failures().size() == 1u);
  auto detected = std::chrono::duration_cast<milliseconds>(t->failures()[0].noticed - hit);
  BOOST_TEST_MESSAGE("failure noticed after " << detected.count() << " ms: " << t->failures()[0].cause);
  BOOST_TEST((detected < detect_within));
  BOOST_TEST(t->failures()[0].cause.find("replica 1") != std::string::npos);
  BOOST_TEST(t->generation() == 1);
  BOOST_TEST(t->world_size() == (how == comeback::elastic ? 1 : 2));
  if (how == comeback::elastic)
    lc.add_node();  // the group grows back at the next epoch boundary
  double accuracy = 0;
  for (int64_t done = m->epoch; done < epochs;) {
    auto next = t->train();
    BOOST_REQUIRE_MESSAGE(next.is_ok(), next.error().to_string());
    done = next->epoch;
  }
  BOOST_TEST(t->world_size() == 2);
  // What a driver records: the failure in epoch 2 with its cause, how the
  // group re-formed, and that it ran epoch 2 again from epoch 1's checkpoint.
  const std::vector<std::string> kinds = log.kinds();
  if (how == comeback::elastic) {
    BOOST_TEST(kinds == (std::vector<std::string>{"failure@2", "shrank@2", "recovered@2", "grew@2"}),
               boost::test_tools::per_element());
    BOOST_TEST(log.at(1).message == "continuing with 1 of 2 replicas (was 2)");
    BOOST_TEST(log.at(2).message ==
               "running again with 1 of 2 replicas (generation 1) from the checkpoint of epoch 1");
  } else {
    BOOST_TEST(kinds == (std::vector<std::string>{"failure@2", "recovered@2"}),
               boost::test_tools::per_element());
    BOOST_TEST(log.at(1).message ==
               "running again with 2 of 2 replicas (generation 1) from the checkpoint of epoch 1");
  }
  BOOST_TEST(log.at(0).message == "failure 1 of at most 2: " + t->failures()[0].cause);
  accuracy = t->validate().value().accuracy;
  BOOST_TEST_MESSAGE("accuracy after recovery " << accuracy << " vs " << reference);
  BOOST_TEST(std::fabs(accuracy - reference) <= 0.005);
  auto hashes = t->parameter_hashes().value();
  BOOST_TEST(hashes[0] == hashes[1]);
  BOOST_REQUIRE(t->shutdown().is_ok());
  kill(victim->pid(), SIGKILL);
  lc.stop_all(milliseconds(5000));
}

} // namespace

// The file's suite; CTest runs each suite inside it on its own (fault_tolerance/NAME).
BOOST_AUTO_TEST_SUITE(fault_tolerance)

BOOST_AUTO_TEST_SUITE(builtin_model)

BOOST_AUTO_TEST_CASE(a_node_killed_mid_epoch_is_noticed_within_a_second_and_training_goes_on_with_one) {
  fail_a_node_mid_epoch(SIGKILL, milliseconds(1000), comeback::elastic);
}

BOOST_AUTO_TEST_CASE(a_node_killed_without_elasticity_waits_for_a_node_to_return) {
  fail_a_node_mid_epoch(SIGKILL, milliseconds(1000), comeback::node_returns);
}

BOOST_AUTO_TEST_CASE(a_stopped_node_is_noticed_through_heartbeats_and_training_goes_on) {
  fail_a_node_mid_epoch(SIGSTOP, milliseconds(2000 + 1500), comeback::elastic);
}

BOOST_AUTO_TEST_CASE(a_corrupted_newest_checkpoint_is_skipped_for_the_one_before) {
  loopback_cluster lc(2);
  dtrain::testing::temp_dir ckpt;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  {
    auto t = trainer::create(*c, mlp(ckpt.path())).value();
    BOOST_REQUIRE(t->train().is_ok());
    BOOST_REQUIRE(t->train().is_ok());  // ckpt-1 and ckpt-2
  }
  // Flip one byte in the middle of a shard of the newest checkpoint.
  std::string newest = ckpt.path() + "/" + dtrain::checkpoint::checkpoint_name(2);
  std::string shard = newest + "/shard-1-of-2.capnp";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    BOOST_REQUIRE_MESSAGE(f.good(), "no shard at " << shard);
    f.seekg(0, std::ios::end);
    auto size = static_cast<long>(f.tellg());
    f.seekp(size / 2);
    char byte = 0;
    f.seekg(size / 2);
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    f.seekp(size / 2);
    f.write(&byte, 1);
  }
  auto t = trainer::create(*c, mlp("")).value();
  BOOST_REQUIRE(t->restore(ckpt.path()).is_ok());
  auto m = t->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 2);  // resumed after ckpt-1, the newest valid one
  // Asked for the corrupt one by name, restore refuses it, naming the shard.
  auto direct = t->restore(newest);
  BOOST_REQUIRE(!direct.is_ok());
  BOOST_TEST(direct.message().find("shard-1-of-2.capnp") != std::string::npos);
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_CASE(out_of_retries_train_fails_naming_the_replica_and_the_cause) {
  loopback_cluster lc(2);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto cfg = mlp("");
  cfg.max_failures = 0;
  event_log log;
  log.listen(cfg);
  auto t = trainer::create(*c, cfg).value();
  auto victim = lc.node_at(t->placement()[1].info.address);
  auto epoch = t->train_async();
  std::this_thread::sleep_for(milliseconds(300));
  kill(victim->pid(), SIGKILL);
  auto m = epoch.get();
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST_MESSAGE(m.error().to_string());
  BOOST_TEST(m.error().message().find("replica 1 (node") != std::string::npos);
  BOOST_TEST(m.error().message().find("gives up after 1 failures") != std::string::npos);
  BOOST_TEST(log.kinds() == (std::vector<std::string>{"failure@1", "gave_up@1"}),
             boost::test_tools::per_element());
  BOOST_TEST(log.at(0).message.find("failure 1 of at most 0: ") == 0u, log.at(0).message);
  BOOST_TEST(log.at(1).message == m.error().to_string());
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_CASE(a_failure_after_a_restore_is_reported_in_the_epoch_after_the_checkpoint) {
  loopback_cluster lc(2);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  dtrain::testing::temp_dir ckpt;
  {
    auto first = trainer::create(*c, mlp(ckpt.path())).value();
    BOOST_REQUIRE(first->train().is_ok());  // epoch 1, checkpointed
    BOOST_REQUIRE(first->shutdown().is_ok());
  }
  // A new group (a resumed run) continues from epoch 1's checkpoint: the
  // epoch it fails in is 2, not its own first.
  auto cfg = mlp("");
  cfg.max_failures = 0;
  event_log log;
  log.listen(cfg);
  auto t = trainer::create(*c, cfg).value();
  BOOST_REQUIRE(t->restore(ckpt.path() + "/" + checkpoint::checkpoint_name(1)).is_ok());
  auto victim = lc.node_at(t->placement()[1].info.address);
  auto epoch = t->train_async();
  std::this_thread::sleep_for(milliseconds(300));
  kill(victim->pid(), SIGKILL);
  BOOST_REQUIRE(!epoch.get().is_ok());
  BOOST_TEST(log.kinds() == (std::vector<std::string>{"failure@2", "gave_up@2"}),
             boost::test_tools::per_element());
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_SUITE_END()

// ZeRO stage 2: kill -9 of one of two nodes in epoch 2. The group goes on
// with one replica (which restores epoch 1's checkpoint, written as two
// shards of the optimizer state, into one whole state), grows back to two
// at the next boundary (resharding the state again through a checkpoint)
// and ends within half a point of the uninterrupted sharded run.
BOOST_AUTO_TEST_SUITE(zero_model)

BOOST_AUTO_TEST_CASE(a_node_killed_under_stage_2_recovers_from_the_checkpoint_and_grows_back) {
  fail_a_node_mid_epoch(SIGKILL, milliseconds(1000), comeback::elastic, zero_mlp);
}

BOOST_AUTO_TEST_CASE(a_node_killed_under_stage_3_recovers_from_the_checkpoint_and_grows_back) {
  fail_a_node_mid_epoch(SIGKILL, milliseconds(1000), comeback::elastic, zero3_mlp);
}

BOOST_AUTO_TEST_SUITE_END()

#ifdef DTRAIN_TEST_TORCH_PLUGIN
// A libtorch model (dtrain's libtorch adapter, in a plugin the driver ships
// to the nodes) through the same failure: kill -9 of one of two nodes in
// epoch 2; the group waits for a node, re-forms, restores epoch 1's
// checkpoint (the module's parameters and libtorch SGD's momentum from the
// sharded files) and ends within half a point of the uninterrupted run.
BOOST_AUTO_TEST_SUITE(libtorch_model)

BOOST_AUTO_TEST_CASE(a_node_killed_under_a_libtorch_model_recovers_from_the_checkpoint) {
  fail_a_node_mid_epoch(SIGKILL, milliseconds(1000), comeback::node_returns, torch_mlp);
}

BOOST_AUTO_TEST_SUITE_END()
#endif

BOOST_AUTO_TEST_SUITE_END()  // fault_tolerance
