// A sweep's end is bounded, and leaves nothing behind: a queued_store's
// close() waits for the store call in flight only, and then no job uses
// the store nor holds it; a sweep stopped
// while its store's calls block, or while its resume reads a disk that
// hangs, returns from fit() within the bound tuner.hpp states, failing
// with a timeout that names the end it could not record; and once fit()
// returned no job of the sweep uses the store (which may be a
// service_client of the cluster's actor system) nor holds it.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/forwarding_store.hpp"
#include "support/memory_store.hpp"
#include "support/scripted_trials.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/driver/tuner/queued_store.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/tune/journal.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::memory_store;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

// Forwards to a memory_store, counting the calls in flight and those that
// start after close() (the test's word that its owner is gone). While
// held, every call first waits `hold` (a service_client whose head does
// not answer, up to its request timeout).
class watched_store final : public dtrain::testing::forwarding_store {
public:
  explicit watched_store(milliseconds hold)
    : forwarding_store(std::make_shared<memory_store>(), "watched store"), hold_(hold) {}

  std::atomic<bool> held{false};
  std::atomic<int> in_flight{0};
  std::atomic<int> after_close{0};
  std::atomic<bool> closed{false};

private:
  void enter() override {
    if (closed)
      ++after_close;
    ++in_flight;
    const auto until = clock_type::now() + hold_;
    while (held && clock_type::now() < until)
      std::this_thread::sleep_for(milliseconds(5));
  }
  void leave() override { --in_flight; }

  milliseconds hold_;
};

trainer_config scripted_trial() {
  trainer_config trial;
  trial.operator_name = "scripted";
  trial.num_replicas = 1;
  return trial;
}

// fit() on its own thread, stopped `after` it started; how long fit()
// took after stop(), at most `wait` (else `unblock` is called until it
// returns, and the time is past `wait`).
struct stopped_fit {
  result<tune::result_grid> grid{status(error_code::internal, "not run")};
  milliseconds after_stop{0};

  stopped_fit(cluster& c, const tune::space& space, const tune_config& config,
              const trainer_config& trial, milliseconds after, milliseconds wait,
              const std::function<void()>& unblock) {
    auto n = std::make_shared<dtrain::testing::launch_counters>();
    std::promise<void> returned;
    auto done = returned.get_future();
    {
      tuner t(c, trial, space, config);
      t.set_launcher(dtrain::testing::scripted_trials(n));
      std::thread fitting([&] {
        grid = t.fit();
        returned.set_value();
      });
      std::this_thread::sleep_for(after);
      const auto stopped = clock_type::now();
      t.stop("stopped by the test");
      if (done.wait_for(wait) != std::future_status::ready)
        while (done.wait_for(milliseconds(10)) != std::future_status::ready)
          unblock();
      after_stop = std::chrono::duration_cast<milliseconds>(clock_type::now() - stopped);
      fitting.join();
    }
  }
};

// Who holds `store` besides the test, once the ended tuner actor's state
// (its copy of the configuration) is gone: polled for 2 s.
long holders_after_cleanup(const std::shared_ptr<watched_store>& store) {
  const auto deadline = clock_type::now() + std::chrono::seconds(2);
  while (store.use_count() > 1 && clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(10));
  return store.use_count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(tuner_stop)

BOOST_AUTO_TEST_CASE(closing_a_queued_store_waits_for_its_call_in_flight_only_then_lets_go) {
  auto store = std::make_shared<watched_store>(milliseconds(300));
  store->held = true;
  auto worker = std::make_shared<job_thread>("test-close");
  queued_store queued(store, worker);
  experiments::trial_row t;
  t.experiment = 1;
  t.id = "00001";
  for (int i = 0; i < 20; ++i)  // 6 s of writes
    BOOST_REQUIRE(queued.put_trial(t).is_ok());
  std::this_thread::sleep_for(milliseconds(100));  // the first is in the store
  BOOST_TEST(store->in_flight.load() == 1);
  const auto start = clock_type::now();
  queued.close();
  const auto took = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
  store->closed = true;
  // Only the call in flight was waited for, and the store is let go.
  BOOST_TEST(took.count() < 1000, "close() took " << took.count() << " ms");
  BOOST_TEST(store->in_flight.load() == 0);
  BOOST_TEST(store.use_count() == 1);
  // The queued writes, and any call after, never reach it.
  auto read = queued.trials(1);
  BOOST_REQUIRE(!read.is_ok());
  BOOST_TEST((read.error().code() == error_code::unavailable), read.error().to_string());
  BOOST_TEST(worker->stop(milliseconds(2000)));
  BOOST_TEST(store->after_close.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_sweep_stopped_while_its_store_blocks_returns_in_its_bound_and_lets_go) {
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  // Every store call blocks 2 s (C): the worker falls far behind the
  // trials' reports, and the sweep's end queues behind them.
  auto store = std::make_shared<watched_store>(milliseconds(2000));
  experiments::experiment_row row;
  row.name = "blocked";
  row.kind = "tune";
  tune_config config;
  config.experiment = "blocked";
  config.num_samples = 4;
  config.max_epochs = 1000;
  config.max_concurrent_trials = 2;
  config.verbosity = 0;
  config.seed = 3;
  config.end_seconds = 1;  // E
  config.store = store;
  config.experiment_id = store->rows->create_experiment(row).value();
  store->held = true;
  trainer_config trial = scripted_trial();
  trial.config["delay_ms"] = "20";
  tune::space space;
  space.add("a", tune::uniform(0.5, 0.9));
  stopped_fit fit(**c, space, config, trial, milliseconds(1500), milliseconds(15000),
                  [&] { store->held = false; });
  store->closed = true;
  const int in_flight = store->in_flight.load();
  config.store.reset();
  const long holders = holders_after_cleanup(store);
  // 2E + 3C + 1.1 s, and 1.9 s for the trials to end.
  BOOST_TEST(fit.after_stop.count() < 11000, "fit() returned " << fit.after_stop.count()
                                                << " ms after stop()");
  BOOST_REQUIRE(!fit.grid.is_ok());
  BOOST_TEST((fit.grid.error().code() == error_code::timeout), fit.grid.error().to_string());
  const std::string why = fit.grid.error().to_string();
  BOOST_TEST(why.find("interrupted") != std::string::npos, why);
  BOOST_TEST(why.find("was not recorded in watched store") != std::string::npos, why);
  // No call in flight when fit() returned, no one but the test holds the
  // store, and no queued call runs later.
  BOOST_TEST(in_flight == 0);
  BOOST_TEST(holders == 1);
  std::this_thread::sleep_for(milliseconds(2500));
  BOOST_TEST(store->after_close.load() == 0);
  BOOST_TEST(store->rows->experiment(config.experiment_id).value().state != "interrupted");
}

BOOST_AUTO_TEST_CASE(a_resume_stopped_while_its_disk_hangs_returns_in_its_bound_and_lets_go) {
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  dtrain::testing::temp_dir dir;
  auto store = std::make_shared<watched_store>(milliseconds(0));
  tune::space space;
  space.add("a", tune::uniform(0.5, 0.9));
  tune_config config;
  config.experiment = "hung";
  config.num_samples = 1;
  config.max_epochs = 4;
  config.verbosity = 0;
  config.seed = 3;
  config.end_seconds = 1;  // E
  experiments::experiment_row row;
  row.name = config.experiment;
  row.kind = "tune";
  config.store = store;
  config.experiment_id = store->rows->create_experiment(row).value();
  config.owner = {std::string(32, 'h'), config.experiment_id, checkpoint::created_text(1700000000),
                  "memory", config.experiment};
  config.experiment_dir = dir.path() + "/hung-" + config.owner.token;
  BOOST_REQUIRE(checkpoint::claim(config.experiment_dir, config.owner).is_ok());
  // One trial, interrupted after epoch 3's report; the manifest of its
  // epoch 4 is a FIFO nobody writes: its resume scan hangs on it.
  {
    auto search = tune::make_searcher(space, config);
    tune::journal j(store->rows, config.experiment_id, config.metric, config.direction);
    tune::trial_record r;
    r.id = "00000";
    r.configuration = search->suggest(r.id).configuration;
    r.checkpoint_dir = config.experiment_dir + "/" + r.id;
    j.created(r);
    for (int64_t epoch = 1; epoch <= 3; ++epoch) {
      tune::report rep{r.id, epoch, {{"validation_accuracy", 0.5}}};
      r.history.push_back(rep);
      j.reported(r, rep);
    }
    BOOST_REQUIRE(j.flush().is_ok());
  }
  const std::string epoch_4 =
      config.experiment_dir + "/00000/" + checkpoint::checkpoint_name(4);
  std::filesystem::create_directories(epoch_4);
  const std::string fifo = epoch_4 + "/manifest.capnp";
  BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  config.resume = true;
  auto unblock = [&] {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // fails while no one reads
    if (fd >= 0)
      ::close(fd);
  };
  stopped_fit fit(**c, space, config, scripted_trial(), milliseconds(1000), milliseconds(12000),
                  unblock);
  store->closed = true;
  config.store.reset();
  const long holders = holders_after_cleanup(store);
  // 2E + 1.1 s (the store answers at once), and 1.9 s to spare.
  BOOST_TEST(fit.after_stop.count() < 5000, "fit() returned " << fit.after_stop.count()
                                                << " ms after stop()");
  BOOST_REQUIRE(!fit.grid.is_ok());
  BOOST_TEST((fit.grid.error().code() == error_code::timeout), fit.grid.error().to_string());
  const std::string why = fit.grid.error().to_string();
  BOOST_TEST(why.find("interrupted") != std::string::npos, why);
  // The scan is still stuck on the FIFO: it holds neither the store nor
  // the tuner, and when it ends it reaches neither.
  BOOST_TEST(holders == 1);
  for (int i = 0; i < 100; ++i) {
    unblock();
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::this_thread::sleep_for(milliseconds(500));
  BOOST_TEST(store->after_close.load() == 0);
  c->reset();  // the actor system goes while the scan's thread may still end
}

BOOST_AUTO_TEST_SUITE_END()
