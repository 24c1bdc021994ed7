// Sweeps of real trainer groups: a trial whose operator fails, a node
// killed (-9) mid-sweep on a head + 3 nodes cluster, Ctrl-C on `dtrain
// tune`, and the shipped ASHA sweep on Fashion-MNIST.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/loopback_cluster.hpp"
#include "support/memory_store.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/experiments/experiment.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

// Calls `on_first` (once) when any trial reports; ends nothing.
class first_report_hook final : public tune::stopper {
public:
  explicit first_report_hook(std::atomic<int>* reports) : reports_(reports) {}
  bool trial_done(const tune::report&) override {
    ++*reports_;
    return false;
  }
  std::string describe() const override { return "test hook"; }

private:
  std::atomic<int>* reports_;
};

trainer_config regression(const std::string& checkpoints) {
  trainer_config t;
  t.operator_name = "linear_regression";
  t.config = {{"samples", "200000"}, {"features", "16"}};
  t.num_replicas = 1;
  t.global_batch_size = 256;
  t.max_failures = 2;
  t.placement_timeout = milliseconds(20000);
  t.collective_timeout = milliseconds(20000);
  t.checkpoint_dir = checkpoints;
  return t;
}

tune_config sweep_of(int64_t trials, int64_t epochs, int concurrent) {
  tune_config c;
  c.experiment = "faults";
  c.metric = "validation_loss";
  c.direction = tune::mode::min;
  c.num_samples = trials;
  c.max_epochs = epochs;
  c.max_concurrent_trials = concurrent;
  c.verbosity = 2;
  return c;
}

cluster_status status_of(cluster& c) {
  caf::scoped_actor self{c.system()};
  cluster_status out;
  self->request(c.head(), std::chrono::seconds(10), status_atom::value, c.session())
      .receive([&](cluster_status& s) { out = std::move(s); },
               [&](caf::error& e) { BOOST_FAIL("status: " << caf::to_string(e)); });
  return out;
}

int used_slots(const cluster_status& s) {
  int n = 0;
  for (int u : s.slots_used)
    n += u;
  return n;
}

} // namespace

// The file's suite; CTest runs each suite inside it on its own (trainer_sweeps/NAME).
BOOST_AUTO_TEST_SUITE(trainer_sweeps)

BOOST_AUTO_TEST_SUITE(tune_faults)

BOOST_AUTO_TEST_CASE(a_trial_whose_operator_fails_is_error_with_that_message_and_the_others_finish) {
  temp_dir dir;
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  tune::space s;
  s.add("lr", tune::grid_search({0.01, -0.1, 0.02}));
  tune_config tc = sweep_of(1, 2, 2);
  tc.searcher = "grid";
  trainer_config t = regression(dir.path());
  t.config["samples"] = "20000";
  tuner sweep(**c, t, s, tc);
  auto g = sweep.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_REQUIRE(g->trials.size() == 3u);
  for (const auto& r : g->trials) {
    bool negative = tune::to_string(r.configuration.at("lr")) == "-0.1";
    BOOST_TEST_MESSAGE("trial " << r.id << " " << tune::to_string(r.status) << " " << r.error);
    BOOST_TEST((r.status == (negative ? tune::trial_status::error : tune::trial_status::terminated)));
    if (negative)
      BOOST_TEST(r.error.find("hyperparameter 'lr': -0.1 is not > 0") != std::string::npos, r.error);
    else
      BOOST_TEST(r.epochs() == 2);
  }
  // Each trial checkpoints in a directory of its own under the sweep's.
  BOOST_TEST(sweep.experiment_dir().rfind(dir.path() + "/faults-", 0) == 0);
  BOOST_TEST(dtrain::testing::entries(sweep.experiment_dir()).size() >= 2u);
  BOOST_TEST(used_slots(status_of(**c)) == 0);
}

BOOST_AUTO_TEST_CASE(a_node_killed_during_a_sweep_is_recovered_and_every_trial_ends) {
  loopback_cluster lc(3);
  temp_dir dir;
  cluster::options o;
  o.address = lc.address;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  tune::space s;
  s.add("lr", tune::loguniform(0.003, 0.03));
  // Recorded in a store: the failure and the recovery must be there.
  auto db = std::make_shared<dtrain::testing::memory_store>();
  experiments::experiment_row row;
  row.name = "faults";
  row.kind = "tune";
  tune_config tc = sweep_of(4, 6, 2);
  tc.store = db;
  tc.experiment_id = db->create_experiment(row).value();
  tuner sweep(**c, regression(dir.path()), s, tc);
  std::atomic<int> reports{0};
  sweep.add_stopper(std::make_unique<first_report_hook>(&reports));
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (reports.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(20));
    cluster_status st = status_of(**c);
    for (size_t i = 0; i < st.nodes.size(); ++i)
      if (st.slots_used[i] > 0)
        if (child_process* node = lc.node_at(st.nodes[i].address)) {
          BOOST_TEST_MESSAGE("killing node " << i << " (pid " << node->pid() << ")");
          kill(node->pid(), SIGKILL);
          killed = true;
          return;
        }
  });
  auto g = sweep.fit();
  killer.join();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(killed.load());
  int restarts = 0;
  for (const auto& r : g->trials) {
    BOOST_TEST_MESSAGE("trial " << r.id << " " << tune::to_string(r.status) << " epochs "
                                << r.epochs() << " restarts " << r.restarts << " " << r.error);
    BOOST_TEST((r.status == tune::trial_status::terminated ||
                r.status == tune::trial_status::stopped));
    restarts += r.restarts;
  }
  BOOST_TEST(g->trials.size() == 4u);
  BOOST_TEST(restarts >= 1);
  // Each restart is a stored failure with its cause, followed by the
  // trial's recovery (after it, by seq), with the epochs the group was in.
  auto events = db->events(tc.experiment_id);
  BOOST_REQUIRE_MESSAGE(events.is_ok(), events.error().to_string());
  int failures = 0;
  std::map<std::string, int64_t> failed_at;  // trial -> seq of its last failure
  for (const auto& e : *events) {
    BOOST_TEST_MESSAGE("event " << e.seq << " trial " << e.trial << " epoch " << e.epoch << " "
                                << e.kind << ": " << e.message);
    BOOST_TEST(e.time > 1.6e9);
    BOOST_TEST(e.epoch >= 1);
    BOOST_TEST(e.epoch <= 6);
    if (e.kind == "failure") {
      ++failures;
      failed_at[e.trial] = e.seq;
      BOOST_TEST(e.message.find("failure ") == 0u, e.message);
      BOOST_TEST(e.message.find(" of at most 2: ") != std::string::npos, e.message);
    } else if (e.kind == "recovered") {
      BOOST_TEST(failed_at.count(e.trial) == 1u, "a recovery without a failure: " << e.trial);
      BOOST_TEST(e.message.find("running again with 1 of 1 replicas") == 0u, e.message);
    } else {
      BOOST_TEST(false, "unexpected event kind " << e.kind << ": " << e.message);
    }
  }
  BOOST_TEST(failures == restarts);
  for (const auto& [trial, seq] : failed_at) {
    bool recovered = false;
    const auto stored_events = db->events(tc.experiment_id, trial).value();
    for (const auto& e : stored_events)
      recovered = recovered || (e.kind == "recovered" && e.seq > seq);
    BOOST_TEST(recovered, "trial " << trial << " failed and has no recovery after it");
  }
  // Every row of the experiment has a seq of its own.
  std::set<int64_t> seqs;
  const auto stored_metrics = db->metrics(tc.experiment_id).value();
  for (const auto& m : stored_metrics)
    seqs.insert(m.seq);
  for (const auto& e : *events)
    BOOST_TEST(seqs.insert(e.seq).second, "event seq " << e.seq << " is a report's too");
  BOOST_TEST(used_slots(status_of(**c)) == 0);
  lc.stop_all(milliseconds(10000));
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_dtrain_tune_and_leaves_no_process_or_slot_behind) {
  loopback_cluster lc(2);
  temp_dir dir;
  std::string exp = dir.file("sweep.yaml");
  dtrain::testing::write_file(exp,
      "name: interrupted\n"
      "operator: linear_regression\n"
      "hyperparameters:\n"
      "  samples: 200000\n"
      "  features: 16\n"
      "  lr: {type: log, base: 10, minval: -3, maxval: -1.5}\n"
      "searcher:\n"
      "  name: random\n"
      "  metric: validation_loss\n"
      "  smaller_is_better: true\n"
      "  max_trials: 6\n"
      "  max_concurrent_trials: 2\n"
      "  max_length: {epochs: 200}\n"
      "global_batch_size: 256\n"
      "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n");
  child_process tune({DTRAIN_BINARY, "tune", exp, "--address", lc.address, "--verbosity", "2"},
                     dir.file("tune.log"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (dtrain::testing::read_file(dir.file("tune.log")).find("epoch 2") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline && tune.running())
    std::this_thread::sleep_for(milliseconds(50));
  BOOST_REQUIRE_MESSAGE(tune.running(), dtrain::testing::read_file(dir.file("tune.log")));
  auto sent = std::chrono::steady_clock::now();
  kill(tune.pid(), SIGINT);
  int code = tune.wait(milliseconds(20000));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::string log = dtrain::testing::read_file(dir.file("tune.log"));
  BOOST_TEST_MESSAGE(log);
  BOOST_TEST(code == 0);
  BOOST_TEST(took < 15.0);
  BOOST_TEST(log.find("stopped: interrupted by a signal") != std::string::npos);
  BOOST_TEST(log.find("best trial") != std::string::npos);
  BOOST_TEST(!tune.running());
  // The cluster has every slot back and no trainer left.
  cluster::options o;
  o.address = lc.address;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  cluster_status st = status_of(**c);
  BOOST_TEST(used_slots(st) == 0);
  BOOST_TEST(st.trainers.empty());
  lc.stop_all(milliseconds(10000));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(asha_sweep)

// The shipped sweep, as a user runs it: 16 trials of one replica, 2 at a
// time, up to 15 epochs. ASHA must spend at most 40% of the epochs the same
// trials take under FIFO; the best accuracy is printed for the record.
BOOST_AUTO_TEST_CASE(the_shipped_asha_sweep_runs_at_most_40_percent_of_the_fifo_epochs) {
  const std::string shipped = std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_asha.yaml";
  auto e = experiments::load_experiment(shipped);
  BOOST_REQUIRE_MESSAGE(e.is_ok(), e.error().to_string());
  BOOST_TEST(e->has_search);
  BOOST_TEST(e->sweep.scheduler == "asha");
  BOOST_TEST(e->sweep.num_samples == 16);
  BOOST_TEST(e->sweep.max_concurrent_trials == 2);
  BOOST_TEST(e->sweep.max_epochs == 15);
  BOOST_TEST(e->slots_per_trial == 1);
  std::vector<std::string> searched = e->space.varying();
  for (const char* name : {"lr", "hidden", "optimizer", "dropout"})
    BOOST_TEST((std::find(searched.begin(), searched.end(), name) != searched.end()), name);

  // Its checkpoints go to a temporary directory, not the shipped path, and
  // its experiment store to a fresh DTRAIN_HOME.
  temp_dir dir;
  setenv("DTRAIN_HOME", dir.path().c_str(), 1);
  std::string text = dtrain::testing::read_file(shipped);
  text = std::regex_replace(text, std::regex("host_path: .*"), "host_path: " + dir.file("ckpt"));
  std::string copy = dir.file("asha.yaml");
  dtrain::testing::write_file(copy, text);
  child_process tune({DTRAIN_BINARY, "tune", copy, "--verbosity", "1"}, dir.file("tune.log"));
  int code = tune.wait(milliseconds(1500 * 1000));
  std::string log = dtrain::testing::read_file(dir.file("tune.log"));
  BOOST_TEST_MESSAGE(log);
  BOOST_REQUIRE(code == 0);
  // Two trials at a time: the second starts before the first ends.
  size_t first_end = log.find(" after ");
  size_t second_start = log.find("trial 00001 PENDING");
  BOOST_TEST((second_start != std::string::npos && second_start < first_end));
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(log, m, std::regex("epochs run: (\\d+) of the (\\d+)")));
  long run = std::stol(m[1]), full = std::stol(m[2]);
  BOOST_TEST(full == 16 * 15);
  BOOST_TEST(run <= full * 40 / 100, run << " of " << full << " epochs");
  BOOST_TEST(std::regex_search(log, m, std::regex("best trial \\d+: validation_accuracy ([0-9.]+)")));
  BOOST_TEST_MESSAGE("best validation accuracy " << m[1] << " after " << run << " epochs");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // trainer_sweeps
