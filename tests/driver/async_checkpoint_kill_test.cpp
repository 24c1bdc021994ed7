// Asynchronous checkpoints on node processes: every node killed with -9
// while a save is in flight (its shards on disk, its manifest not yet:
// DTRAIN_TEST_CHECKPOINT_WRITE_DELAY_MS holds it there) leaves the
// previous checkpoint as the newest valid one, and a new group restores it.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/loopback_cluster.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

trainer_config saving_mlp(const std::string& checkpoints) {
  trainer_config t;
  t.name = "async-saves";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "64"}, {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 2;
  t.global_batch_size = 128;  // 469 steps an epoch
  t.seed = 5;
  t.collective_timeout = milliseconds(30000);
  t.placement_timeout = milliseconds(5000);
  t.checkpoint_dir = checkpoints;
  t.checkpoint_keep = 0;
  t.checkpoint_every_steps = 300;
  t.max_failures = 0;  // the group is gone: fail at once
  return t;
}

// The temporary directory of a save under `root` holding both shards and
// no manifest, or "" when there is none (yet).
std::string save_in_flight(const std::string& root) {
  for (const std::string& name : dtrain::testing::entries(root)) {
    if (!checkpoint::is_temporary_name(name))
      continue;
    const auto files = dtrain::testing::entries(root + "/" + name);
    int shards = 0;
    bool manifest = false;
    for (const std::string& f : files) {
      shards += f.rfind("shard-", 0) == 0 && f.find(".tmp") == std::string::npos ? 1 : 0;
      manifest = manifest || f == serialization::capnp_codec::manifest_file;
    }
    if (shards == 2 && !manifest)
      return root + "/" + name;
  }
  return "";
}

// The "parameters" buffer of the checkpoint in `dir`, read whole.
std::vector<float> parameters_in(const std::string& dir) {
  serialization::capnp_codec codec;
  auto m = codec.read_manifest(dir);
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  int64_t count = 0;
  for (const auto& [name, n] : m->buffers)
    count = name == "parameters" ? n : count;
  std::vector<float> out(static_cast<size_t>(count));
  BOOST_REQUIRE(codec.read_buffers(dir, *m, {{"parameters", out.data(), count}}).is_ok());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(async_checkpoint_kill)

BOOST_AUTO_TEST_CASE(every_node_killed_during_an_asynchronous_save_leaves_the_previous_checkpoint) {
  dtrain::testing::temp_dir ckpt;
  serialization::capnp_codec codec;
  std::string previous, in_flight;
  {
    // Every node process holds each save 4 s after its shard is written.
    setenv("DTRAIN_TEST_CHECKPOINT_WRITE_DELAY_MS", "4000", 1);
    loopback_cluster lc(2);
    unsetenv("DTRAIN_TEST_CHECKPOINT_WRITE_DELAY_MS");
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
    auto t = trainer::create(*c, saving_mlp(ckpt.path())).value();
    // Epoch 1 saves at step 300 and publishes that save at its end.
    auto first = t->train();
    BOOST_REQUIRE_MESSAGE(first.is_ok(), first.error().to_string());
    auto newest = checkpoint::newest_valid(codec, ckpt.path());
    BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
    previous = *newest;
    BOOST_TEST(codec.read_manifest(previous)->step == 300);
    // Epoch 2 saves at step 600: both shards written, the manifest held back.
    auto second = t->train_async();
    const auto deadline = clock_type::now() + std::chrono::seconds(60);
    while (in_flight.empty() && clock_type::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
      in_flight = save_in_flight(ckpt.path());
    }
    BOOST_REQUIRE_MESSAGE(!in_flight.empty(), "no save of epoch 2 came in flight");
    for (auto& node : lc.nodes)
      kill(node->pid(), SIGKILL);
    auto failed = second.get();
    BOOST_TEST(!failed.is_ok());
    BOOST_TEST_MESSAGE("epoch 2: " << (failed.is_ok() ? "ok" : failed.error().to_string()));
    (void)t->shutdown();
  }
  // The save in flight was never published: the previous one is the newest.
  auto newest = checkpoint::newest_valid(codec, ckpt.path());
  BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
  BOOST_TEST(*newest == previous);
  BOOST_TEST(dtrain::testing::entries(ckpt.path()).size() == 2u);  // it, and the killed save's leftovers
  // A new group on new nodes restores it, bit for bit.
  loopback_cluster lc(2);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto cfg = saving_mlp(ckpt.path());
  cfg.checkpoint_every_steps = 0;
  auto t = trainer::create(*c, cfg).value();
  BOOST_REQUIRE(t->restore(ckpt.path()).is_ok());
  auto model = t->get_model();
  BOOST_REQUIRE_MESSAGE(model.is_ok(), model.error().to_string());
  BOOST_TEST((*model == parameters_in(previous)));
  auto next = t->train();  // and trains on from it
  BOOST_REQUIRE_MESSAGE(next.is_ok(), next.error().to_string());
  BOOST_TEST(next->epoch == 1);
  BOOST_REQUIRE(t->shutdown().is_ok());
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_SUITE_END()
