// The tuner actor with scripted trials: a launcher whose runners report a
// value per epoch from the trial's configuration (no training), so the
// sweep's logic is checked fast and exactly: concurrency, scheduler stops,
// failures, stop(), stoppers, capacity, seeding.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "support/memory_store.hpp"
#include "support/scripted_trials.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/tune/journal.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::launch_counters;
using std::chrono::milliseconds;

namespace {

struct embedded {
  std::unique_ptr<cluster> c;
  explicit embedded(int slots) {
    cluster::options o;
    o.local_slots = slots;
    auto r = cluster::connect(o);
    BOOST_REQUIRE_MESSAGE(r.is_ok(), r.error().to_string());
    c = std::move(*r);
  }
};

trainer_config scripted_template() {
  trainer_config t;
  t.operator_name = "scripted";
  t.num_replicas = 1;
  return t;
}

tune_config quiet(int64_t samples, int64_t epochs) {
  tune_config c;
  c.experiment = "scripted";
  c.num_samples = samples;
  c.max_epochs = epochs;
  c.verbosity = 0;
  c.seed = 3;
  return c;
}

int count(const tune::result_grid& g, tune::trial_status s) {
  return static_cast<int>(std::count_if(g.trials.begin(), g.trials.end(),
                                        [&](const auto& t) { return t.status == s; }));
}

// A scheduler with one scripted decision: trial 00000 exploits trial 00001
// at its epoch 2 (with `after`); every other report goes on.
class exploit_once final : public tune::scheduler {
public:
  explicit exploit_once(tune::config after) : after_(std::move(after)) {}
  tune::decision on_result(const std::string& trial, int64_t epoch, double) override {
    if (trial != "00000" || epoch != 2 || decided_)
      return tune::decision::go_on;
    decided_ = true;
    return tune::decision::exploit;
  }
  void on_end(const std::string&, tune::trial_end) override {}
  tune::exploit_plan exploit(const std::string&) override { return {"00001", after_}; }
  std::string describe() const override { return "exploit once"; }

private:
  tune::config after_;
  bool decided_ = false;
};

// A valid checkpoint of `epoch` under `root`: one shard, its manifest.
std::string real_checkpoint(const std::string& root, int64_t epoch) {
  auto codec = serialization::default_checkpoint_codec();
  const std::string dir = root + "/" + checkpoint::checkpoint_name(epoch);
  std::vector<float> values(64, 0.25f * static_cast<float>(epoch));
  auto shard = codec->write_shard(dir, 0, 1, {{"parameters", values.data(), 64}});
  BOOST_REQUIRE_MESSAGE(shard.is_ok(), shard.error().to_string());
  checkpoint::manifest m;
  m.trial = "scripted";
  m.epoch = epoch;
  m.buffers = {{"parameters", 64}};
  m.shards = {*shard};
  BOOST_REQUIRE(codec->write_manifest(dir, m).is_ok());
  return dir;
}

// Experiment `id`'s sweep directory under `root`, marked as `dtrain tune`
// marks it (the owner in `c`).
std::string own_directory(tune_config& c, const std::string& root, int64_t id) {
  c.owner = {std::string(32, 'a'), id, checkpoint::created_text(1700000000), "memory", "scripted"};
  c.experiment_dir = root + "/" + std::to_string(id) + "-" + c.owner.token;
  BOOST_REQUIRE(checkpoint::claim(c.experiment_dir, c.owner).is_ok());
  return c.experiment_dir;
}

/// A sweep of `samples` trials of `epochs` epochs over a in [0.5, 0.9],
/// recorded in an in-memory store: its experiment created, its directory
/// under `parent` marked as its own.
struct recorded_sweep {
  std::shared_ptr<dtrain::testing::memory_store> db =
      std::make_shared<dtrain::testing::memory_store>();
  tune::space space;
  tune_config config;
  std::string root;

  recorded_sweep(const std::string& parent, int64_t samples, int64_t epochs)
    : config(quiet(samples, epochs)) {
    experiments::experiment_row row;
    row.name = "scripted";
    row.kind = "tune";
    space.add("a", tune::uniform(0.5, 0.9));
    config.store = db;
    config.experiment_id = db->create_experiment(row).value();
    root = own_directory(config, parent, config.experiment_id);
  }
};

// Launches scripted trials and remembers where each trial's first launch
// restored from.
struct restore_log {
  std::mutex mutex;
  std::map<std::string, std::string> first;
  trial_launcher wrap(trial_launcher inner) {
    return [this, inner](caf::actor_system& sys, const caf::actor& tuner, const trial_launch& l) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        first.emplace(l.id, l.restore_from);
      }
      return inner(sys, tuner, l);
    };
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(tuner_actor)

// What a checkpoint saved right after an epoch carries of it, and reads
// back only for that epoch: a lost report is rebuilt as it was.
BOOST_AUTO_TEST_CASE(an_epochs_metrics_travel_through_manifest_entries_for_that_epoch_only) {
  dtrain::actors::metrics_msg m;
  m.epoch = 7;
  m.steps = 120;
  m.samples = 30720;
  m.loss = 0.4375;
  m.accuracy = 0.8125;
  m.seconds = 1.5;
  m.samples_per_second = 20480;
  m.lr = 0.0625f;
  m.allreduce_seconds = 0.25;
  m.extra = {{"perplexity", 3.5}};
  auto entries = dtrain::actors::epoch_manifest_entries(m);
  entries["dtrain.resume_batch"] = 3;  // the replica's own keys beside them
  auto back = dtrain::actors::epoch_from_manifest(entries, 7);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->steps == 120);
  BOOST_TEST(back->samples == 30720);
  BOOST_TEST(back->loss == 0.4375);
  BOOST_TEST(back->accuracy == 0.8125);
  BOOST_TEST(back->samples_per_second == 20480.0);
  BOOST_TEST(back->lr == 0.0625f);
  BOOST_TEST(back->allreduce_seconds == 0.25);
  BOOST_TEST((back->extra == std::map<std::string, double>{{"perplexity", 3.5}}));
  BOOST_TEST(!dtrain::actors::epoch_from_manifest(entries, 8).has_value());
  BOOST_TEST(!dtrain::actors::epoch_from_manifest({{"dtrain.resume_batch", 3}}, 7).has_value());
}

BOOST_AUTO_TEST_CASE(fifo_runs_every_trial_to_the_end_and_never_more_at_once_than_allowed) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("delay_ms", tune::constant(int64_t{5}));
  tune_config c = quiet(10, 4);
  c.max_concurrent_trials = 3;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(g->trials.size() == 10u);
  BOOST_TEST(count(*g, tune::trial_status::terminated) == 10);
  BOOST_TEST(n->epochs.load() == 40);
  BOOST_TEST(n->most_live.load() == 3);
  for (const auto& r : g->trials)
    BOOST_TEST(r.epochs() == 4);
  auto best = g->best();
  BOOST_REQUIRE(best.is_ok());
  for (const auto& r : g->trials)
    BOOST_TEST(r.best("validation_accuracy", tune::mode::max) <=
               (*best)->best("validation_accuracy", tune::mode::max));
}

BOOST_AUTO_TEST_CASE(the_cluster_bounds_concurrency_when_max_concurrent_trials_is_zero) {
  embedded e(2);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("delay_ms", tune::constant(int64_t{5}));
  tune_config c = quiet(6, 3);
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(n->most_live.load() == 2);
}

BOOST_AUTO_TEST_CASE(asha_stops_trials_that_fall_behind_at_a_rung) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  // Trial i's final value rises with i: under ASHA (rf 2, rungs 1, 2, 4)
  // a trial that arrives at a rung behind the earlier ones stops there.
  tune::space s;
  s.add("a", tune::grid_search({0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2}));
  tune_config c = quiet(1, 8);
  c.searcher = "grid";
  c.max_concurrent_trials = 1;
  c.scheduler = "asha";
  c.asha.grace_period = 1;
  c.asha.reduction_factor = 2;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  // One at a time, in decreasing quality: the first runs to the end, every
  // later one is worse than the best at rung 1 and stops at epoch 1.
  BOOST_REQUIRE(g->trials.size() == 8u);
  BOOST_TEST(g->trials[0].status == tune::trial_status::terminated);
  BOOST_TEST(g->trials[0].epochs() == 8);
  for (size_t i = 1; i < g->trials.size(); ++i) {
    BOOST_TEST(g->trials[i].status == tune::trial_status::stopped);
    BOOST_TEST(g->trials[i].epochs() == 1);
  }
  BOOST_TEST(n->epochs.load() == 8 + 7);
}

BOOST_AUTO_TEST_CASE(a_failing_trial_is_error_with_its_cause_and_the_others_finish) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("fail_at", tune::grid_search({int64_t{0}, int64_t{2}, int64_t{0}}));
  tune_config c = quiet(1, 3);
  c.searcher = "grid";
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(count(*g, tune::trial_status::error) == 1);
  BOOST_TEST(count(*g, tune::trial_status::terminated) == 2);
  for (const auto& r : g->trials)
    if (r.status == tune::trial_status::error)
      BOOST_TEST(r.error.find("scripted failure at epoch 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_failed_trials_ends_the_sweep) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("fail_at", tune::constant(int64_t{1}));
  tune_config c = quiet(20, 3);
  c.max_concurrent_trials = 1;
  c.max_failed_trials = 2;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(g->trials.size() == 3u);
  BOOST_TEST(g->stop_reason.find("max_failed_trials 2") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(stop_interrupts_every_trial_and_returns_the_grid_so_far) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("delay_ms", tune::constant(int64_t{50}));
  tune_config c = quiet(50, 1000);
  c.max_concurrent_trials = 2;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(400));
    t.stop("interrupted by the test");
  });
  auto start = std::chrono::steady_clock::now();
  auto g = t.fit();
  stopper.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(took < 2.0);
  BOOST_TEST(g->stop_reason == "interrupted by the test");
  BOOST_TEST(g->trials.size() == 2u);
  for (const auto& r : g->trials) {
    BOOST_TEST(r.interrupted);
    BOOST_TEST(r.epochs() > 0);
  }
  BOOST_TEST(n->live.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_metric_threshold_ends_the_sweep_when_reached) {
  embedded e(4);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("a", tune::grid_search({0.5, 0.6, 0.95, 0.7, 0.8}));
  tune_config c = quiet(1, 5);
  c.searcher = "grid";
  c.max_concurrent_trials = 1;
  c.has_stop_threshold = true;
  c.stop_threshold = 0.9;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(g->trials.size() == 3u);  // the third reaches 0.95 - 0.1/5 = 0.93
  BOOST_TEST(!g->stop_reason.empty());
}

BOOST_AUTO_TEST_CASE(a_trial_larger_than_the_cluster_fails_the_sweep_at_once) {
  embedded e(2);
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9));
  trainer_config big = scripted_template();
  big.num_replicas = 3;
  tuner t(*e.c, big, s, quiet(4, 2));
  t.set_launcher(dtrain::testing::scripted_trials(std::make_shared<launch_counters>()));
  auto g = t.fit();
  BOOST_REQUIRE(!g.is_ok());
  BOOST_TEST(g.error().message().find("needs 3 CPU slots but the cluster has 2") !=
             std::string::npos, g.error().message());
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_trials) {
  embedded e(4);
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("b", tune::loguniform(0.01, 1.0));
  std::vector<std::vector<tune::config>> runs;
  for (int run = 0; run < 2; ++run) {
    tuner t(*e.c, scripted_template(), s, quiet(5, 1));
    t.set_launcher(dtrain::testing::scripted_trials(std::make_shared<launch_counters>()));
    auto g = t.fit();
    BOOST_REQUIRE(g.is_ok());
    std::vector<tune::config> configs;
    for (const auto& r : g->trials)
      configs.push_back(r.configuration);
    runs.push_back(configs);
  }
  BOOST_TEST((runs[0] == runs[1]));
}

BOOST_AUTO_TEST_CASE(a_malformed_metric_is_refused_before_any_trial_starts) {
  embedded e(2);
  auto n = std::make_shared<launch_counters>();
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9));
  tune_config c = quiet(2, 2);
  c.metric = "val-acc";
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE(!g.is_ok());
  BOOST_TEST(g.error().message().find("val-acc") != std::string::npos);
  BOOST_TEST(n->launched.load() == 0);
}

// The driver died after trial 00000's exploit copied trial 00001's epoch-4
// checkpoint into its directory (the lineage is stored) and before 00000
// reported again: the resumed sweep continues 00000 from that copy, as the
// sweep that ran through did, not from its first epoch.
BOOST_AUTO_TEST_CASE(a_resumed_trial_continues_from_the_checkpoint_its_exploit_copied) {
  embedded e(4);
  dtrain::testing::temp_dir dir;
  recorded_sweep sweep(dir.path(), 2, 6);
  auto& db = sweep.db;
  tune::space& s = sweep.space;
  tune_config& c = sweep.config;
  c.max_concurrent_trials = 2;
  const std::string& root = sweep.root;
  // What the first driver recorded: both trials, 00001's epochs 1-4,
  // 00000's epochs 1-2, and the exploit of 00001's epoch 4 by 00000.
  auto search = tune::make_searcher(s, c);
  tune::journal j(db, c.experiment_id, c.metric, c.direction);
  std::vector<tune::trial_record> trials(2);
  for (int i = 0; i < 2; ++i) {
    trials[i].id = i == 0 ? "00000" : "00001";
    trials[i].configuration = search->suggest(trials[i].id).configuration;
    trials[i].checkpoint_dir = root + "/" + trials[i].id;
    j.created(trials[i]);
  }
  auto report = [&](tune::trial_record& r, int64_t epoch) {
    tune::report rep{r.id, epoch, {{"validation_accuracy", 0.5}}};
    r.history.push_back(rep);
    j.reported(r, rep);
  };
  for (int64_t epoch = 1; epoch <= 4; ++epoch)
    report(trials[1], epoch);
  report(trials[0], 1);
  report(trials[0], 2);
  tune::config after = trials[1].configuration;
  after["a"] = 0.6;
  const tune::config before = trials[0].configuration;
  trials[0].configuration = after;
  j.exploited(trials[0], "00001", 4, before, &trials[0].configuration);
  BOOST_REQUIRE(j.flush().is_ok());
  real_checkpoint(trials[1].checkpoint_dir, 4);
  const std::string copy = real_checkpoint(trials[0].checkpoint_dir, 4);

  c.resume = true;
  tuner t(*e.c, scripted_template(), s, c);
  t.set_scheduler(std::make_unique<exploit_once>(after));
  restore_log log;
  t.set_launcher(log.wrap(dtrain::testing::scripted_trials(std::make_shared<launch_counters>())));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(log.first.at("00000") == copy);
  BOOST_TEST(tune::to_json(g->trials.at(0).configuration) == tune::to_json(after));
}

// A resumed trial whose newest checkpoint (of its last stored report) is
// corrupt goes on from the next older valid one, saying so; it never
// restores an unverified checkpoint.
BOOST_AUTO_TEST_CASE(a_resumed_trial_skips_a_corrupt_newest_checkpoint_for_the_next_valid_one) {
  embedded e(2);
  dtrain::testing::temp_dir dir;
  recorded_sweep sweep(dir.path(), 1, 6);
  auto& db = sweep.db;
  tune::space& s = sweep.space;
  tune_config& c = sweep.config;
  const std::string& root = sweep.root;
  auto search = tune::make_searcher(s, c);
  tune::journal j(db, c.experiment_id, c.metric, c.direction);
  tune::trial_record r;
  r.id = "00000";
  r.configuration = search->suggest(r.id).configuration;
  r.checkpoint_dir = root + "/" + r.id;
  j.created(r);
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    tune::report rep{r.id, epoch, {{"validation_accuracy", 0.5}}};
    r.history.push_back(rep);
    j.reported(r, rep);
  }
  BOOST_REQUIRE(j.flush().is_ok());
  const std::string good = real_checkpoint(r.checkpoint_dir, 2);
  const std::string corrupt = real_checkpoint(r.checkpoint_dir, 3);
  {  // one byte of its shard flipped: the size still matches, the checksum not
    auto m = serialization::default_checkpoint_codec()->read_manifest(corrupt);
    BOOST_REQUIRE(m.is_ok());
    std::fstream shard(corrupt + "/" + m->shards.at(0).file,
                       std::ios::in | std::ios::out | std::ios::binary);
    shard.seekg(-1, std::ios::end);
    char last = 0;
    shard.read(&last, 1);
    shard.seekp(-1, std::ios::end);
    last = static_cast<char>(~last);
    shard.write(&last, 1);
  }

  c.resume = true;
  c.verbosity = 1;
  c.out = std::tmpfile();
  BOOST_REQUIRE(c.out != nullptr);
  tuner t(*e.c, scripted_template(), s, c);
  restore_log log;
  t.set_launcher(log.wrap(dtrain::testing::scripted_trials(std::make_shared<launch_counters>())));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(log.first.at("00000") == good);
  std::string said(1 << 16, '\0');
  std::rewind(c.out);
  said.resize(std::fread(&said[0], 1, said.size(), c.out));
  std::fclose(c.out);
  BOOST_TEST(said.find("skipping the invalid checkpoint " + corrupt) != std::string::npos, said);
}

// A sweep handed a directory whose owner marker is another experiment's
// (another store's experiment of the same id) refuses to run, naming
// whose it is, and deletes nothing there: not even the checkpoints newer
// than its own last stored report, which a resume of its own would.
BOOST_AUTO_TEST_CASE(a_sweep_never_runs_in_nor_deletes_from_a_directory_marked_by_another) {
  embedded e(2);
  dtrain::testing::temp_dir dir;
  recorded_sweep sweep(dir.path(), 1, 6);
  auto& db = sweep.db;
  tune::space& s = sweep.space;
  tune_config& c = sweep.config;
  const std::string& root = sweep.root;
  checkpoint::owner other = c.owner;
  other.created = checkpoint::created_text(1700000999);
  other.store = "/home/someone/.dtrain/experiments.db";
  BOOST_REQUIRE(checkpoint::write_owner(root, other).is_ok());
  auto search = tune::make_searcher(s, c);
  tune::journal j(db, c.experiment_id, c.metric, c.direction);
  tune::trial_record r;
  r.id = "00000";
  r.configuration = search->suggest(r.id).configuration;
  r.checkpoint_dir = root + "/" + r.id;
  j.created(r);
  tune::report rep{r.id, 1, {{"validation_accuracy", 0.5}}};
  r.history.push_back(rep);
  j.reported(r, rep);
  BOOST_REQUIRE(j.flush().is_ok());
  const std::string newer = real_checkpoint(r.checkpoint_dir, 3);

  c.resume = true;
  auto n = std::make_shared<launch_counters>();
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE(!g.is_ok());
  BOOST_TEST(g.error().message().find("belongs to experiment 1 (scripted) of the store "
                                      "/home/someone/.dtrain/experiments.db") != std::string::npos,
             g.error().message());
  BOOST_TEST(n->launched.load() == 0);
  BOOST_TEST(std::filesystem::exists(newer + "/manifest.capnp"));
}

// The driver died after the store had trial 00000's last report (the
// max_epochs stopper ends it there) but not its end: the resumed sweep
// does not run it again, and records the end the replay decided, so the
// store never keeps a finished trial RUNNING.
BOOST_AUTO_TEST_CASE(a_resume_records_the_end_of_a_trial_whose_end_was_lost) {
  embedded e(2);
  auto db = std::make_shared<dtrain::testing::memory_store>();
  experiments::experiment_row row;
  row.name = "scripted";
  row.kind = "tune";
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9));
  tune_config c = quiet(1, 2);
  c.store = db;
  c.experiment_id = db->create_experiment(row).value();
  auto search = tune::make_searcher(s, c);
  tune::journal j(db, c.experiment_id, c.metric, c.direction);
  tune::trial_record r;
  r.id = "00000";
  r.configuration = search->suggest(r.id).configuration;
  j.created(r);
  r.status = tune::trial_status::running;
  j.updated(r);
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    tune::report rep{r.id, epoch, {{"validation_accuracy", 0.5}}};
    r.history.push_back(rep);
    j.reported(r, rep);
  }
  BOOST_REQUIRE(j.flush().is_ok());

  c.resume = true;
  auto n = std::make_shared<launch_counters>();
  tuner t(*e.c, scripted_template(), s, c);
  t.set_launcher(dtrain::testing::scripted_trials(n));
  auto g = t.fit();
  BOOST_REQUIRE_MESSAGE(g.is_ok(), g.error().to_string());
  BOOST_TEST(n->launched.load() == 0);
  BOOST_REQUIRE(g->trials.size() == 1u);
  BOOST_TEST(g->trials[0].status == tune::trial_status::terminated);
  auto stored = db->trials(c.experiment_id);
  BOOST_REQUIRE(stored.is_ok());
  BOOST_REQUIRE(stored->size() == 1u);
  BOOST_TEST(stored->at(0).state == "TERMINATED");
  BOOST_TEST(stored->at(0).end_how == "completed");
  BOOST_TEST(stored->at(0).seq_ended > 0);
}

BOOST_AUTO_TEST_SUITE_END()
