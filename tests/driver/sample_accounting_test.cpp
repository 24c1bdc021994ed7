// Exact sample accounting on node processes: a group of three replicas is
// preempted half-way through an epoch (checkpointed with its position),
// loses a node to kill -9, and finishes the epoch as two; then, two, it is
// preempted again, a node joins, and the epoch finishes as three. The
// operator (tests/plugins/sample_log_plugin.cpp) logs the samples of every
// step it trains: every sample of each epoch must have been trained exactly
// once, across every replica of every group.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "support/loopback_cluster.hpp"
#include "dtrain/driver/trainer.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using std::chrono::milliseconds;

namespace {

constexpr int64_t samples = 1000;

// epoch -> sample -> times trained, from every log under `dir`.
std::map<int64_t, std::map<int64_t, int>> trained(const std::string& dir) {
  std::map<int64_t, std::map<int64_t, int>> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      int64_t epoch = 0, id = 0;
      words >> epoch;
      while (words >> id)
        ++out[epoch][id];
    }
  }
  return out;
}

// Every sample of `epoch` once: the first fault, if any, for the message.
std::string exactly_once(const std::map<int64_t, int>& counts) {
  for (int64_t id = 0; id < samples; ++id) {
    auto it = counts.find(id);
    if (it == counts.end())
      return "sample " + std::to_string(id) + " was never trained";
    if (it->second != 1)
      return "sample " + std::to_string(id) + " was trained " + std::to_string(it->second) +
             " times";
  }
  if (counts.size() != static_cast<size_t>(samples))
    return "samples outside the set were trained";
  return "";
}

// Starts an epoch, preempts it once it is under way, and returns its
// metrics: preempted, with where it stopped.
metrics_msg preempt_half_way(trainer& t) {
  auto epoch = t.train_async();
  std::this_thread::sleep_for(milliseconds(400));
  BOOST_REQUIRE(t.preempt().is_ok());
  auto m = epoch.get();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_REQUIRE_MESSAGE(m->preempted, "the epoch ended before the preemption");
  BOOST_TEST_MESSAGE("preempted after " << m->resume_batch << " steps");
  return *m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sample_accounting)

BOOST_AUTO_TEST_CASE(kill_shrink_and_grow_mid_epoch_train_every_sample_exactly_once) {
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);
  loopback_cluster lc(3);
  dtrain::testing::temp_dir ckpt, logs;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  trainer_config cfg;
  cfg.name = "accounting";
  cfg.operator_name = "sample_log";
  cfg.plugins = {DTRAIN_TEST_SAMPLE_LOG_PLUGIN};
  cfg.config = {{"samples", std::to_string(samples)}, {"log_dir", logs.path()},
                {"step_ms", "25"}};
  cfg.num_replicas = 3;
  cfg.min_replicas = 2;
  cfg.global_batch_size = 24;  // 8 per replica for three, 12 for two
  cfg.seed = 5;
  cfg.collective_timeout = milliseconds(30000);
  cfg.placement_timeout = milliseconds(10000);
  cfg.checkpoint_dir = ckpt.path();
  cfg.max_failures = 2;
  auto t = trainer::create(*c, cfg).value();

  // Epoch 1: three replicas, preempted; a node dies; two finish it.
  const metrics_msg first = preempt_half_way(*t);
  BOOST_TEST(first.resume_batch > 0);
  BOOST_TEST(first.resume_batch < (samples + 23) / 24);
  auto victim = lc.node_at(t->placement()[2].info.address);
  BOOST_REQUIRE(victim != nullptr);
  kill(victim->pid(), SIGKILL);
  auto m = t->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 1);
  BOOST_TEST(t->world_size() == 2);
  BOOST_TEST(exactly_once(trained(logs.path())[1]) == "");

  // Epoch 2: two replicas, preempted; a node joins; three finish it.
  preempt_half_way(*t);
  lc.add_node();
  std::this_thread::sleep_for(milliseconds(1100));  // past the trainer's growth check interval
  m = t->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 2);
  BOOST_TEST(t->world_size() == 3);
  BOOST_TEST(exactly_once(trained(logs.path())[2]) == "");
  auto hashes = t->parameter_hashes().value();
  BOOST_TEST(std::all_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h == hashes[0]; }));
  BOOST_REQUIRE(t->shutdown().is_ok());
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_SUITE_END()
