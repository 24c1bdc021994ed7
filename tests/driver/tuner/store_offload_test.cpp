// Store and disk work off CAF's scheduler threads: an experiment service
// whose store is slow (every call sleeps) never keeps another actor of the
// same system from answering, and keeps a client's calls in order; a
// service that ends with jobs queued stops within its bound and fails the
// requests it will not run at once; sweeps whose store is slow, or whose
// resume reads a disk that hangs, leave the scheduler to the others.
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "support/forwarding_store.hpp"
#include "support/memory_store.hpp"
#include "support/scripted_trials.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/experiment_service.hpp"
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

// A memory_store behind a `delay` in every call: a store on a disk that
// takes its time (or an SQLite file another process holds locked).
class slow_store final : public dtrain::testing::forwarding_store {
public:
  slow_store(std::shared_ptr<memory_store> rows, milliseconds delay)
    : forwarding_store(std::move(rows), "slow store"), delay_(delay) {}

private:
  void enter() override { std::this_thread::sleep_for(delay_); }

  milliseconds delay_;
};

experiments::store_opener slow_opener(std::shared_ptr<memory_store> rows, milliseconds delay) {
  return [rows, delay]() -> result<std::unique_ptr<experiments::experiment_store>> {
    return std::unique_ptr<experiments::experiment_store>(new slow_store(rows, delay));
  };
}

// An actor that answers at once: what must never wait for a store.
caf::behavior echo(caf::event_based_actor*) {
  return {[](int32_t x) { return x; }};
}

// How long `echo_actor` took to answer (at most `bound`: then it did not).
milliseconds echo_time(caf::actor_system& sys, const caf::actor& echo_actor, milliseconds bound) {
  caf::scoped_actor self{sys};
  const auto start = clock_type::now();
  milliseconds took = bound;
  self->request(echo_actor, bound, int32_t{7})
      .receive([&](int32_t) {
                 took = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
               },
               [&](caf::error&) {});
  return took;
}

// This process's threads named `name` (/proc/self/task/*/comm).
int threads_named(const std::string& name) {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr)
    return -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.')
      continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string line;
    std::getline(comm, line);
    n += line == name;
  }
  closedir(dir);
  return n;
}

experiments::experiment_row an_experiment() {
  experiments::experiment_row e;
  e.name = "slow";
  e.kind = "tune";
  e.metric = "validation_loss";
  return e;
}

trainer_config scripted_trial() {
  trainer_config trial;
  trial.operator_name = "scripted";
  trial.num_replicas = 1;
  return trial;
}

// A recorded sweep of one trial, interrupted after its epoch 3's report,
// to resume: the trial's directory holds epoch 4's checkpoint, whose
// manifest is a FIFO that nobody writes. Reading it hangs (as a disk that
// does not answer would) until `fifo` is opened for writing.
struct hung_resume {
  std::shared_ptr<memory_store> db = std::make_shared<memory_store>();
  tune::space space;
  tune_config config;
  std::string epoch_4;
  std::string fifo;

  hung_resume(const std::string& parent, int n) {
    config.experiment = "hung" + std::to_string(n);
    config.num_samples = 1;
    config.max_epochs = 4;
    config.verbosity = 0;
    config.seed = 3;
    space.add("a", tune::uniform(0.5, 0.9));
    experiments::experiment_row row;
    row.name = config.experiment;
    row.kind = "tune";
    config.store = db;
    config.experiment_id = db->create_experiment(row).value();
    config.owner = {std::string(32, static_cast<char>('a' + n)), config.experiment_id,
                    checkpoint::created_text(1700000000), "memory", config.experiment};
    config.experiment_dir = parent + "/" + config.experiment + "-" + config.owner.token;
    BOOST_REQUIRE(checkpoint::claim(config.experiment_dir, config.owner).is_ok());
    auto search = tune::make_searcher(space, config);
    tune::journal j(db, config.experiment_id, config.metric, config.direction);
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
    epoch_4 = r.checkpoint_dir + "/" + checkpoint::checkpoint_name(4);
    std::filesystem::create_directories(epoch_4);
    fifo = epoch_4 + "/manifest.capnp";
    BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    config.resume = true;
  }

  // Lets a reader blocked in opening the FIFO go on (it reads nothing).
  void unblock() const {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // fails while no one reads
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(store_offload)

BOOST_AUTO_TEST_CASE(a_slow_store_never_keeps_another_actor_from_answering_and_calls_keep_their_order) {
  system_config config;
  // One scheduler thread: an actor blocked in a store call would hold them all.
  config.set("scheduler.max-threads", 1);
  caf::actor_system sys{config};
  auto rows = std::make_shared<memory_store>();
  auto service = experiments::spawn_experiment_service(sys, slow_opener(rows, milliseconds(700)),
                                                       "slow.db",
                                                       std::make_shared<session_directory>(false));
  auto other = sys.spawn(echo);
  std::atomic<bool> done{false};
  result<std::vector<experiments::trial_row>> read{status(error_code::internal, "not read")};
  std::thread driver([&] {
    experiments::service_client client(sys, service, "", "slow.db", milliseconds(20000));
    auto id = client.create_experiment(an_experiment());
    if (id) {
      experiments::trial_row t;
      t.experiment = *id;
      t.id = "00001";
      t.state = "running";
      (void)client.put_trial(t);  // one-way: queued behind nothing, read after it
      read = client.trials(*id);
    }
    done = true;
  });
  // While the store takes its 2.1 s, the other actor answers each time.
  milliseconds slowest{0};
  int probes = 0;
  while (!done && probes < 40) {
    std::this_thread::sleep_for(milliseconds(100));
    slowest = std::max(slowest, echo_time(sys, other, milliseconds(400)));
    ++probes;
  }
  driver.join();
  BOOST_TEST(probes >= 5);
  BOOST_TEST(slowest.count() < 300, "another actor took " << slowest.count()
                                        << " ms to answer while the store was busy");
  BOOST_REQUIRE_MESSAGE(read.is_ok(), read.error().to_string());
  BOOST_REQUIRE(read->size() == 1u);  // the write, then the read: in the order sent
  BOOST_TEST(read->front().id == "00001");
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(other, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_service_that_ends_with_jobs_queued_stops_within_its_bound) {
  system_config config;
  caf::actor_system sys{config};
  const int workers_before = threads_named("dtrain-xstore");
  auto rows = std::make_shared<memory_store>();
  auto service = experiments::spawn_experiment_service(sys, slow_opener(rows, milliseconds(1000)),
                                                       "slow.db",
                                                       std::make_shared<session_directory>(false));
  experiments::service_client client(sys, service, "", "slow.db", milliseconds(30000));
  // 12 s of writes queued, then a read behind them.
  experiments::trial_row t;
  t.experiment = 1;
  t.id = "00001";
  for (int i = 0; i < 12; ++i)
    (void)client.put_trial(t);
  result<std::vector<experiments::trial_row>> read{status(error_code::internal, "not read")};
  clock_type::time_point read_at;
  std::thread reader([&] {
    read = client.trials(1);
    read_at = clock_type::now();
  });
  std::this_thread::sleep_for(milliseconds(300));
  BOOST_TEST(threads_named("dtrain-xstore") == workers_before + 1);
  caf::scoped_actor self{sys};
  self->monitor(service);
  const auto start = clock_type::now();
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; },
                caf::after(std::chrono::seconds(20)) >> [] {});
  const auto ended = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
  reader.join();
  const auto answered = std::chrono::duration_cast<milliseconds>(read_at - start);
  BOOST_TEST(down);
  // 5 s for the queued jobs, and the one running then (1 s) left behind.
  BOOST_TEST(ended.count() < 7000, "the service took " << ended.count() << " ms to end");
  BOOST_TEST(answered.count() < 7000, "the queued read was answered after " << answered.count()
                                          << " ms, not at the end of the service");
  BOOST_REQUIRE(!read.is_ok());
  BOOST_TEST((read.error().code() == error_code::unavailable), read.error().to_string());
  // The worker is gone too, at the latest when the job it was left in ends.
  auto deadline = clock_type::now() + std::chrono::seconds(3);
  while (threads_named("dtrain-xstore") > workers_before && clock_type::now() < deadline)
    std::this_thread::sleep_for(milliseconds(50));
  BOOST_TEST(threads_named("dtrain-xstore") == workers_before);
}

BOOST_AUTO_TEST_CASE(sweeps_with_a_slow_store_leave_the_scheduler_to_the_others) {
  cluster::options o;
  o.local_slots = 4;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  caf::actor_system& sys = (*c)->system();
  auto other = sys.spawn(echo);
  // Two sweeps at once, each writing every report to a store whose calls
  // take 100 ms: two tuner actors that waited on it would hold both of
  // the process's scheduler threads.
  auto n = std::make_shared<dtrain::testing::launch_counters>();
  std::atomic<int> running{2};
  std::vector<result<tune::result_grid>> grids(2, status(error_code::internal, "not run"));
  std::vector<std::shared_ptr<memory_store>> rows;
  std::vector<std::thread> sweeps;
  for (int i = 0; i < 2; ++i) {
    rows.push_back(std::make_shared<memory_store>());
    tune_config config;
    config.experiment = "slow" + std::to_string(i);
    config.num_samples = 4;
    config.max_epochs = 4;
    config.max_concurrent_trials = 2;
    config.verbosity = 0;
    config.seed = 3;
    config.store = std::make_shared<slow_store>(rows.back(), milliseconds(100));
    config.experiment_id = rows.back()->create_experiment(an_experiment()).value();
    sweeps.emplace_back([&, i, config] {
      trainer_config trial = scripted_trial();
      tune::space space;
      space.add("a", tune::uniform(0.5, 0.9));
      tuner t(**c, trial, space, config);
      t.set_launcher(dtrain::testing::scripted_trials(n));
      grids[i] = t.fit();
      --running;
    });
  }
  milliseconds slowest{0};
  int probes = 0;
  while (running > 0 && probes < 300) {
    std::this_thread::sleep_for(milliseconds(100));
    slowest = std::max(slowest, echo_time(sys, other, milliseconds(1000)));
    ++probes;
  }
  for (auto& t : sweeps)
    t.join();
  BOOST_TEST(probes >= 3);
  BOOST_TEST(slowest.count() < 500, "another actor took " << slowest.count()
                                        << " ms to answer while the sweeps wrote");
  for (int i = 0; i < 2; ++i) {
    BOOST_REQUIRE_MESSAGE(grids[i].is_ok(), grids[i].error().to_string());
    BOOST_TEST(grids[i]->trials.size() == 4u);
    // Every report reached the store, and the sweep's end after them.
    auto metrics = rows[i]->metrics(1, "");
    BOOST_REQUIRE(metrics.is_ok());
    BOOST_TEST(metrics->size() == 4u * 4u * 4u);  // 4 trials, 4 epochs, 4 metrics
    BOOST_TEST(rows[i]->experiment(1).value().state == "completed");
  }
  BOOST_TEST(n->epochs.load() == 2 * 4 * 4);
  caf::anon_send_exit(other, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(resumed_sweeps_whose_disk_hangs_leave_the_scheduler_to_the_others) {
  cluster::options o;
  o.local_slots = 2;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  caf::actor_system& sys = (*c)->system();
  auto other = sys.spawn(echo);
  dtrain::testing::temp_dir dir;
  std::vector<std::unique_ptr<hung_resume>> hung;
  for (int i = 0; i < 2; ++i)
    hung.push_back(std::make_unique<hung_resume>(dir.path(), i));
  // Two resumes at once, each finding its trial's resume point on a disk
  // that hangs: two tuner actors that read it themselves would hold both
  // of the process's scheduler threads.
  auto n = std::make_shared<dtrain::testing::launch_counters>();
  std::atomic<int> running{2};
  std::vector<result<tune::result_grid>> grids(2, status(error_code::internal, "not run"));
  std::vector<std::thread> sweeps;
  for (int i = 0; i < 2; ++i)
    sweeps.emplace_back([&, i] {
      tuner t(**c, scripted_trial(), hung[i]->space, hung[i]->config);
      t.set_launcher(dtrain::testing::scripted_trials(n));
      grids[i] = t.fit();
      --running;
    });
  std::this_thread::sleep_for(milliseconds(1000));  // both reach the FIFO
  milliseconds slowest{0};
  for (int probe = 0; probe < 3; ++probe)
    slowest = std::max(slowest, echo_time(sys, other, milliseconds(1000)));
  const bool hung_meanwhile = running == 2;
  const auto deadline = clock_type::now() + std::chrono::seconds(60);
  while (running > 0 && clock_type::now() < deadline) {
    for (const auto& h : hung)
      h->unblock();
    std::this_thread::sleep_for(milliseconds(10));
  }
  for (auto& t : sweeps)
    t.join();
  BOOST_TEST(hung_meanwhile, "the sweeps did not wait for their disk");
  BOOST_TEST(slowest.count() < 500, "another actor took " << slowest.count()
                                        << " ms to answer while the resumes read a hung disk");
  for (int i = 0; i < 2; ++i) {
    BOOST_REQUIRE_MESSAGE(grids[i].is_ok(), grids[i].error().to_string());
    BOOST_REQUIRE(grids[i]->trials.size() == 1u);
    BOOST_TEST((grids[i]->trials[0].status == tune::trial_status::terminated));
    // Its unreadable epoch 4 was no resume point: removed, trained again.
    BOOST_TEST(!std::filesystem::exists(hung[i]->epoch_4));
  }
  caf::anon_send_exit(other, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
