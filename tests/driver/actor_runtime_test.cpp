// The actor runtime end to end: an embedded cluster in this process, and a
// head with two node processes on loopback started through the `dtrain`
// command line, with a driver (this process) attached to them.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "support/child_process.hpp"
#include "support/loopback_cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/security/certificates.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
using dtrain::testing::require_identical_replicas;
using std::chrono::milliseconds;

namespace {

actors::trainer_config regression(int replicas) {
  actors::trainer_config t;
  t.name = "regression";
  t.operator_name = "linear_regression";
  t.config = {{"planted", "true"}, {"lr", "0.01"}};
  t.num_replicas = replicas;
  t.global_batch_size = 64;
  t.seed = 3;
  t.collective_timeout = milliseconds(10000);
  t.placement_timeout = milliseconds(1000);
  return t;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What `replica` answers `self`'s request: "" when it did it (replied with
// a Reply), else its refusal.
template <class Reply, class... Ts>
std::string answer(caf::scoped_actor& self, const replica_actor& replica, Ts... request) {
  std::string why = "no answer";
  self->request(replica, std::chrono::seconds(10), request...)
      .receive([&](Reply) { why.clear(); },
               [&](caf::error& e) { why = from_caf(e, "replica").message(); });
  return why;
}

// That `replica` does nothing for a message carrying `capability` (one it
// does not hold): no checkpoint written under `evil`, none restored from
// `checkpoint`, no parameters.
void expect_refused(caf::scoped_actor& self, const replica_actor& replica,
                    const std::string& capability, const std::string& evil,
                    const std::string& checkpoint) {
  const std::string saved =
      answer<caf::ok_atom>(self, replica, save_atom::value, capability, evil, int32_t{1});
  BOOST_TEST(contains(saved, "save refused"), saved);
  BOOST_TEST(contains(saved, "not this replica's owner"), saved);
  BOOST_TEST(!std::filesystem::exists(evil));
  const std::string restored =
      answer<caf::ok_atom>(self, replica, restore_atom::value, capability, checkpoint);
  BOOST_TEST(contains(restored, "restore refused"), restored);
  const std::string params =
      answer<std::vector<char>>(self, replica, params_atom::value, capability);
  BOOST_TEST(contains(params, "params refused"), params);
}

} // namespace

// The file's suite; CTest runs each suite inside it on its own (actor_runtime/NAME).
BOOST_AUTO_TEST_SUITE(actor_runtime)

BOOST_AUTO_TEST_SUITE(local_cluster)

BOOST_AUTO_TEST_CASE(two_local_replicas_train_and_stay_bitwise_identical) {
  set_blas_threads(1);
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)});
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  auto t = actors::trainer::create(**c, regression(2));
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  double first = 0, last = 0;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    auto m = (*t)->train();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    BOOST_TEST(m->epoch == epoch);
    BOOST_TEST(m->samples == 10000);
    (epoch == 1 ? first : last) = m->loss;
    require_identical_replicas(**t, 2);
  }
  BOOST_TEST(last < first);
  auto model = (*t)->get_model();
  BOOST_REQUIRE(model.is_ok());
  BOOST_TEST(model->size() == 11u);  // linear(10 -> 1): weight and bias
  BOOST_TEST((*t)->shutdown().is_ok());
  BOOST_TEST(!(*t)->train().is_ok());  // shut down: no more epochs
}

BOOST_AUTO_TEST_CASE(save_and_restore_round_trip_through_the_trainer) {
  set_blas_threads(1);
  dtrain::testing::temp_dir dir;
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto t = actors::trainer::create(*c, regression(2)).value();
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->save(dir.file("ckpt")).is_ok());
  auto saved = t->get_model().value();
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->restore(dir.file("ckpt")).is_ok());
  BOOST_TEST(t->get_model().value() == saved);
  auto bad = t->restore(dir.file("missing"));
  BOOST_REQUIRE(!bad.is_ok());
  BOOST_TEST(bad.message().find(dir.file("missing")) != std::string::npos);
  BOOST_TEST(t->failures().empty());  // the caller's mistake, not a failure of the group
  BOOST_TEST(t->generation() == 0);
}

BOOST_AUTO_TEST_CASE(a_group_larger_than_the_cluster_fails_at_once_saying_what_is_missing) {
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto start = std::chrono::steady_clock::now();
  auto t = actors::trainer::create(*c, regression(3));
  BOOST_REQUIRE(!t.is_ok());
  BOOST_TEST_MESSAGE(t.error().to_string());
  BOOST_TEST(t.error().message().find("needs 3 CPU slots but the cluster has 2") != std::string::npos);
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(1)));
}

BOOST_AUTO_TEST_CASE(a_group_that_fits_later_waits_and_says_why) {
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto holder = actors::trainer::create(*c, regression(2)).value();
  auto waiting = actors::trainer::create(*c, regression(1));  // placement_timeout 1 s
  BOOST_REQUIRE(!waiting.is_ok());
  BOOST_TEST_MESSAGE(waiting.error().to_string());
  BOOST_TEST((waiting.error().code() == error_code::timeout));
  BOOST_TEST(waiting.error().message().find("0 free") != std::string::npos);
  BOOST_REQUIRE(holder->shutdown().is_ok());
  auto now_fits = actors::trainer::create(*c, regression(1));
  BOOST_TEST(now_fits.is_ok());
}

BOOST_AUTO_TEST_CASE(an_unknown_operator_is_reported_by_name) {
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto cfg = regression(2);
  cfg.operator_name = "no_such_operator";
  auto t = actors::trainer::create(*c, cfg);
  BOOST_REQUIRE(!t.is_ok());
  BOOST_TEST(t.error().message().find("no_such_operator") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_precision_is_refused_naming_the_key_and_the_choices) {
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto cfg = regression(2);
  cfg.precision = "fp8";
  auto t = actors::trainer::create(*c, cfg);
  BOOST_REQUIRE(!t.is_ok());
  const std::string& message = t.error().message();
  BOOST_TEST(message.find("precision") != std::string::npos, message);
  BOOST_TEST(message.find("fp8") != std::string::npos, message);
  BOOST_TEST(message.find("fp32, tf32, bf16 or fp16") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(two_local_replicas_train_in_fp16_and_report_the_loss_scale) {
  set_blas_threads(1);
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto cfg = regression(2);
  cfg.precision = "fp16";
  auto t = actors::trainer::create(*c, cfg);
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  auto m = (*t)->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->extra.count("loss_scale") == 1u);
  BOOST_TEST(m->extra.count("skipped_steps") == 1u);
  // 157 steps, fewer than the 2000 growth needs: the scale can only have
  // come down from 65536, halving once per skipped step.
  BOOST_TEST(m->extra["loss_scale"] ==
             std::ldexp(65536.0, -static_cast<int>(m->extra["skipped_steps"])));
  require_identical_replicas(**t, 2);
  BOOST_TEST((*t)->shutdown().is_ok());
}

BOOST_AUTO_TEST_CASE(a_non_finite_loss_stops_the_trainer_at_once_instead_of_retrying) {
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto cfg = regression(2);
  cfg.config["lr"] = "1e30";  // diverges within the first epoch
  cfg.max_failures = 3;
  auto t = actors::trainer::create(*c, cfg).value();
  auto m = t->train();
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST_MESSAGE(m.error().to_string());
  BOOST_TEST((m.error().code() == error_code::numerical_error));
  BOOST_TEST(m.error().message().find("not finite") != std::string::npos);
  BOOST_TEST(m.error().message().find("not retried") != std::string::npos);
  BOOST_TEST(t->failures().size() == 1u);
  BOOST_TEST(t->generation() == 0);  // no new group was formed
}

BOOST_AUTO_TEST_CASE(the_shipped_fashion_mnist_experiment_reaches_088_with_two_replicas) {
  set_blas_threads(1);
  auto e = experiments::load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist.yaml");
  BOOST_REQUIRE_MESSAGE(e.is_ok(), e.error().to_string());
  BOOST_REQUIRE(e->slots_per_trial == 2);
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  actors::trainer_config tc = actors::trainer_config_from(*e);
  tc.config["data_dir"] = dtrain::testing::fashion_mnist_dir();
  dtrain::testing::temp_dir checkpoints;
  tc.checkpoint_dir = checkpoints.file("fashion-mnist");  // not the shared /tmp path
  auto t = actors::trainer::create(*c, tc).value();
  metrics_msg v;
  for (int64_t epoch = 0; epoch < e->epochs; ++epoch) {
    auto m = t->train();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    v = t->validate().value();
    BOOST_TEST_MESSAGE("epoch " << epoch + 1 << " validation accuracy " << v.accuracy);
  }
  require_identical_replicas(*t, 2);
  BOOST_TEST(v.samples == 10000);
  BOOST_TEST(v.accuracy >= 0.88);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multi_process_cluster)

BOOST_AUTO_TEST_CASE(head_and_two_nodes_train_two_replicas_and_stop_cleanly) {
  loopback_cluster lc(2);
  {
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)});
    BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
    auto t = actors::trainer::create(**c, regression(2));
    BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
    BOOST_TEST((*t)->placement()[0].node != (*t)->placement()[1].node);  // one per node
    BOOST_TEST_MESSAGE("replicas ready in " << (*t)->startup_seconds() << " s");
    for (int epoch = 1; epoch <= 2; ++epoch) {
      auto m = (*t)->train();
      BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
      require_identical_replicas(**t, 2);
    }
    BOOST_TEST((*t)->shutdown().is_ok());
  }
  lc.stop_all(milliseconds(5000));
  for (auto& n : lc.nodes)
    BOOST_TEST(!dtrain::testing::process_exists(n->pid()));
  BOOST_TEST(!dtrain::testing::process_exists(lc.head->pid()));
}

// Any process connected to a node's can address its actors (CAF 0.17 ties
// no message to a connection): a second client that got hold of a live
// replica's handle, here from another actor system through a published
// actor, can make it do nothing without the trainer's capability.
BOOST_AUTO_TEST_CASE(a_replica_answers_only_the_trainer_that_started_it) {
  set_blas_threads(1);
  loopback_cluster lc(1);
  dtrain::testing::temp_dir dir;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto t = actors::trainer::create(*c, regression(1)).value();
  BOOST_REQUIRE(t->train().is_ok());
  const replica_actor owned = t->replicas().at(0);
  // The driver hands the handle out; the stranger's system takes it.
  auto& sys = c->system();
  auto dispenser = sys.spawn([owned](caf::event_based_actor*) -> caf::behavior {
    return {[=](caf::get_atom) { return owned; }};
  });
  const uint16_t port = publish_actor(sys, dispenser, 0, "127.0.0.1").value();
  system_config stranger_config;
  caf::actor_system stranger_sys{stranger_config};
  caf::scoped_actor stranger{stranger_sys};
  auto remote = stranger_sys.middleman().remote_actor("127.0.0.1", port);
  BOOST_REQUIRE(remote);
  replica_actor stolen;
  stranger->request(*remote, std::chrono::seconds(5), caf::get_atom::value)
      .receive([&](replica_actor& r) { stolen = std::move(r); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  BOOST_REQUIRE(stolen);
  const std::string evil = dir.file("evil");
  for (const std::string& capability : {std::string(), security::random_hex(32)}) {
    const std::string saved =
        answer<caf::ok_atom>(stranger, stolen, save_atom::value, capability, evil, int32_t{1});
    BOOST_TEST(contains(saved, "save refused"), saved);
    BOOST_TEST(contains(saved, "not this replica's owner"), saved);
    BOOST_TEST(!std::filesystem::exists(evil));
    const std::string restored =
        answer<caf::ok_atom>(stranger, stolen, restore_atom::value, capability, dir.file("any"));
    BOOST_TEST(contains(restored, "restore refused"), restored);
    BOOST_TEST(contains(restored, "not this replica's owner"), restored);
    const std::string input = "validation";  // an input the operator has
    const std::string rows =
        answer<int64_t>(stranger, stolen, predict_atom::value, capability, input);
    BOOST_TEST(contains(rows, "predict refused"), rows);
    const std::string chunk = answer<predict_chunk>(stranger, stolen, predict_atom::value,
                                                    capability, input, int64_t{0}, int64_t{8});
    BOOST_TEST(contains(chunk, "predict refused"), chunk);
    for (const std::string& other :
         {answer<std::vector<char>>(stranger, stolen, params_atom::value, capability),
          answer<metrics_msg>(stranger, stolen, train_atom::value, capability),
          answer<caf::ok_atom>(stranger, stolen, preempt_atom::value, capability)})
      BOOST_TEST(contains(other, "not this replica's owner"), other);
  }
  BOOST_TEST(!std::filesystem::exists(evil));
  // The trainer still trains, saves and restores.
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->save(dir.file("ckpt")).is_ok());
  auto before = t->get_model().value();
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->restore(dir.file("ckpt")).is_ok());
  BOOST_TEST(t->get_model().value() == before);
  BOOST_TEST(t->failures().empty());
  caf::anon_send_exit(dispenser, caf::exit_reason::user_shutdown);
}

// Every replica has a capability of its own, drawn when it is spawned: the
// node that hosts rank 0 (which learns rank 0's from its spec) opens no
// other rank's replica, and after a failure (a node declared dead) the
// group formed again answers none of the old capabilities.
BOOST_AUTO_TEST_CASE(a_replicas_capability_opens_no_other_replica_nor_the_next_generation) {
  set_blas_threads(1);
  loopback_cluster lc(2);
  dtrain::testing::temp_dir dir;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  auto cfg = regression(2);
  // Checkpoint-restart: the group formed again is all new replicas (a live
  // recovery keeps a survivor, with its own capability: live_recovery_test).
  cfg.recovery = "checkpoint";
  auto t = actors::trainer::create(*c, cfg).value();
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->save(dir.file("ckpt")).is_ok());
  const std::vector<std::string> first = t->replica_capabilities();
  BOOST_REQUIRE(first.size() == 2u);
  BOOST_TEST(first[0].size() >= min_capability_chars);
  BOOST_TEST(first[1].size() >= min_capability_chars);
  caf::scoped_actor self{c->system()};
  expect_refused(self, t->replicas().at(1), first[0], dir.file("evil"), dir.file("ckpt"));
  expect_refused(self, t->replicas().at(0), first[1], dir.file("evil"), dir.file("ckpt"));
  // Rank 1 goes; the next epoch re-forms the group (generation 1).
  caf::anon_send_exit(t->replicas().at(1), caf::exit_reason::kill);
  auto m = t->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_REQUIRE(t->generation() == 1);
  BOOST_REQUIRE(t->world_size() == 2);
  const std::vector<std::string> second = t->replica_capabilities();
  BOOST_REQUIRE(second.size() == 2u);
  for (size_t rank = 0; rank < 2; ++rank)
    for (const std::string& old : first)
      expect_refused(self, t->replicas().at(rank), old, dir.file("evil"), dir.file("ckpt"));
  // The trainer's own messages still go through.
  BOOST_REQUIRE(t->train().is_ok());
  BOOST_REQUIRE(t->save(dir.file("ckpt2")).is_ok());
  require_identical_replicas(*t, 2);
  BOOST_TEST(t->failures().size() == 1u);
}

BOOST_AUTO_TEST_CASE(replicas_of_a_killed_driver_are_torn_down_and_their_slots_freed) {
  loopback_cluster lc(2);
  auto driver_log = lc.home.file("driver.log");
  {
    // A driver in its own process, training for a long time.
    child_process driver({DTRAIN_BINARY, "train",
                          std::string(DTRAIN_SOURCE_DIR) + "/experiments/linear_regression.yaml",
                          "--address", lc.address},
                         driver_log);
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
    // Wait until the driver holds both slots.
    bool placed = false;
    for (int i = 0; i < 100 && !placed; ++i) {
      caf::scoped_actor self{c->system()};
      self->request(c->head(), std::chrono::seconds(5), status_atom::value, c->session())
          .receive([&](cluster_status& st) { placed = !st.trainers.empty(); }, [](caf::error&) {});
      std::this_thread::sleep_for(milliseconds(50));
    }
    BOOST_REQUIRE_MESSAGE(placed, "the driver never placed its replicas");
    BOOST_REQUIRE(driver.stop(SIGKILL, milliseconds(2000)));
    auto killed = std::chrono::steady_clock::now();
    bool freed = false;
    while (!freed && std::chrono::steady_clock::now() - killed < std::chrono::seconds(5)) {
      caf::scoped_actor self{c->system()};
      self->request(c->head(), std::chrono::seconds(5), status_atom::value, c->session())
          .receive([&](cluster_status& st) { freed = st.trainers.empty(); }, [](caf::error&) {});
      std::this_thread::sleep_for(milliseconds(50));
    }
    BOOST_TEST(freed);
    // The slots are usable again at once.
    auto t = actors::trainer::create(*c, regression(2));
    BOOST_TEST(t.is_ok());
  }
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_CASE(an_unreachable_head_is_an_error_naming_the_address) {
  auto start = std::chrono::steady_clock::now();
  auto c = cluster::connect({"127.0.0.1:1", 0, 0, milliseconds(500)});
  BOOST_REQUIRE(!c.is_ok());
  BOOST_TEST(c.error().message().find("127.0.0.1:1") != std::string::npos);
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(3)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(preemption)

// Preempted mid-epoch, checkpointed, restored by a new trainer: the result
// is bit for bit the uninterrupted run's.
BOOST_AUTO_TEST_CASE(a_preempted_group_resumes_mid_epoch_to_the_same_parameters) {
  set_blas_threads(1);
  auto c = cluster::connect({"", 2, 0, milliseconds(5000)}).value();
  auto config = regression(2);
  config.config["samples"] = "200000";  // an epoch long enough to interrupt
  std::vector<float> uninterrupted;
  {
    auto t = actors::trainer::create(*c, config).value();
    BOOST_REQUIRE(t->train().is_ok());
    BOOST_REQUIRE(t->train().is_ok());
    uninterrupted = t->get_model().value();
  }
  dtrain::testing::temp_dir dir;
  config.checkpoint_dir = dir.path();
  {
    auto t = actors::trainer::create(*c, config).value();
    BOOST_REQUIRE(t->train().is_ok());
    auto epoch2 = t->train_async();
    std::this_thread::sleep_for(milliseconds(30));
    BOOST_REQUIRE(t->preempt().is_ok());
    auto m = epoch2.get();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    BOOST_REQUIRE_MESSAGE(m->preempted, "the epoch ended before the preemption was seen");
    BOOST_TEST(m->epoch == 1);
    BOOST_TEST(m->resume_batch > 0);
    BOOST_TEST_MESSAGE("preempted after " << m->resume_batch << " batches");
  }
  auto t = actors::trainer::create(*c, config).value();
  BOOST_REQUIRE(t->restore(dir.path()).is_ok());
  auto m = t->train();
  BOOST_REQUIRE(m.is_ok());
  BOOST_TEST(m->epoch == 2);
  BOOST_TEST(!m->preempted);
  BOOST_TEST((t->get_model().value() == uninterrupted));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // actor_runtime
