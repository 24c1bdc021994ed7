// `dtrain train` and `dtrain tune` as experiments in the store, through the
// real binary on an embedded cluster: every run a new experiment, a changed
// file never inherits another's checkpoints, a resume of a changed file
// refused naming the keys, and a sweep whose driver is killed (-9) resumed
// to the same trials and decisions as a sweep that ran through.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "support/child_process.hpp"
#include "support/dtrain_command.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/experiments/store.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::child_process;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

// A fresh DTRAIN_HOME (the store lives there) for the binaries a test runs.
struct home_dir {
  temp_dir dir;
  home_dir() { setenv("DTRAIN_HOME", dir.path().c_str(), 1); }
  std::string db() const { return dir.file("experiments.db"); }
};

using ran = testing::command_result;
using testing::run_dtrain;

// A small regression experiment: epochs of a few milliseconds.
std::string regression_experiment(const temp_dir& dir, const std::string& lr, int epochs) {
  std::string path = dir.file("regression-" + lr + ".yaml");
  testing::write_file(path, "name: regression\n"
                            "operator: linear_regression\n"
                            "hyperparameters: {lr: " + lr + ", samples: 2000, features: 8, optimizer: sgd}\n"
                            "global_batch_size: 32\n"
                            "epochs: " + std::to_string(epochs) + "\n"
                            "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n"
                            "seed: 5\n");
  return path;
}

// A sweep one trial at a time, so its order of events is fixed: random
// learning rates and optimizers, ASHA on the validation loss.
std::string sweep_experiment(const temp_dir& dir) {
  std::string path = dir.file("sweep.yaml");
  testing::write_file(path, "name: regression-sweep\n"
                            "operator: linear_regression\n"
                            "hyperparameters:\n"
                            "  lr: {type: log, base: 10, minval: -3.5, maxval: -1}\n"
                            "  optimizer: {type: categorical, vals: [sgd, adam]}\n"
                            "  samples: 2000\n"
                            "  features: 8\n"
                            "searcher:\n"
                            "  name: asha\n"
                            "  metric: validation_loss\n"
                            "  smaller_is_better: true\n"
                            "  max_trials: 10\n"
                            "  max_concurrent_trials: 1\n"
                            "  max_length: {epochs: 6}\n"
                            "  grace_period: 1\n"
                            "  divisor: 2\n"
                            "global_batch_size: 32\n"
                            "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n"
                            "seed: 3\n");
  return path;
}

std::unique_ptr<experiments::experiment_store> reader(const std::string& db) {
  experiments::sqlite_options o;
  o.read_only = true;
  auto s = experiments::open_sqlite_store(db, o);
  BOOST_TEST_REQUIRE(s.is_ok(), s.error().to_string());
  return std::move(*s);
}

int64_t experiment_id_in(const std::string& log) {
  std::smatch m;
  BOOST_TEST_REQUIRE(std::regex_search(log, m, std::regex("experiment (\\d+)")), log);
  return std::stoll(m[1]);
}

// What a sweep left in the store, trial by trial.
struct sweep_outcome {
  std::map<std::string, std::string> configs, states;
  std::map<std::string, int64_t> epochs;
  std::map<std::string, double> best;
  std::map<std::string, int> reports;  // epochs reported, counted
};

sweep_outcome outcome_of(experiments::experiment_store& s, int64_t id) {
  sweep_outcome out;
  auto trials = s.trials(id);
  BOOST_TEST_REQUIRE(trials.is_ok(), trials.error().to_string());
  for (const auto& t : *trials) {
    out.configs[t.id] = t.hyperparameters;
    out.states[t.id] = t.state;
    out.epochs[t.id] = t.epochs;
    out.best[t.id] = t.best;
  }
  auto metrics = s.metrics(id);
  BOOST_TEST_REQUIRE(metrics.is_ok());
  for (const auto& m : *metrics)
    if (m.name == "validation_loss")
      ++out.reports[m.trial];
  return out;
}

// Every file under `root` (relative path -> size): what another store's
// run must leave exactly as it was.
std::map<std::string, uintmax_t> files_under(const std::string& root) {
  std::map<std::string, uintmax_t> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file())
      out[std::filesystem::relative(it->path(), root).string()] = it->file_size();
  return out;
}

experiments::experiment_row row_of(const temp_dir& home, int64_t id) {
  auto e = reader(home.file("experiments.db"))->experiment(id);
  BOOST_TEST_REQUIRE(e.is_ok(), e.error().to_string());
  return *e;
}

void set_storage(const temp_dir& home, int64_t id, const std::string& storage) {
  auto opened = experiments::open_sqlite_store(home.file("experiments.db"));
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  experiments::experiment_row e = (*opened)->experiment(id).value();
  e.storage = storage;
  BOOST_TEST_REQUIRE((*opened)->update_experiment(e).is_ok());
  BOOST_TEST_REQUIRE((*opened)->flush().is_ok());
}

} // namespace

// The file's suite; CTest runs each suite inside it on its own (experiment_runs/NAME).
BOOST_AUTO_TEST_SUITE(experiment_runs)

BOOST_AUTO_TEST_SUITE(runs)

// Two stores (two DTRAIN_HOMEs: two users, two launch jobs, a test beside
// a user's runs) share a host_path, and each numbers its first experiment
// 1: the second run neither moves nor prunes the first's checkpoints, and
// its resume restores its own.
BOOST_AUTO_TEST_CASE(two_stores_sharing_a_host_path_never_touch_each_others_checkpoints) {
  temp_dir dir, home_a, home_b;
  const std::string file = regression_experiment(dir, "0.01", 2);
  setenv("DTRAIN_HOME", home_a.path().c_str(), 1);
  ran a = run_dtrain({"train", file}, dir.file("a.log"));
  BOOST_TEST_REQUIRE(a.code == 0, a.log);
  const std::string storage_a = row_of(home_a, 1).storage;
  const auto files_a = files_under(storage_a);
  BOOST_TEST_REQUIRE(files_a.size() > 2u, storage_a);

  setenv("DTRAIN_HOME", home_b.path().c_str(), 1);
  ran b = run_dtrain({"train", file}, dir.file("b.log"));
  BOOST_TEST_REQUIRE(b.code == 0, b.log);
  BOOST_TEST(experiment_id_in(b.log) == 1);
  const std::string storage_b = row_of(home_b, 1).storage;
  BOOST_TEST(storage_a != storage_b);
  BOOST_TEST(b.log.find("moved") == std::string::npos, b.log);
  BOOST_TEST((files_under(storage_a) == files_a), "store b's run changed store a's checkpoints");

  // b resumes its experiment 1 to 3 epochs: from its own checkpoint.
  ran resumed = run_dtrain({"train", regression_experiment(dir, "0.02", 3), "--resume", "1",
                            "--force"},
                           dir.file("resumed.log"));
  BOOST_TEST_REQUIRE(resumed.code == 0, resumed.log);
  BOOST_TEST(resumed.log.find("resumed from the newest valid checkpoint in " + storage_b) !=
                 std::string::npos,
             resumed.log);
  BOOST_TEST((files_under(storage_a) == files_a), "store b's resume changed store a's checkpoints");
}

// Before markers, both stores' experiment 1 checkpointed in <root>/1. The
// first resume adopts the unmarked directory (saying so) and marks it; the
// other store's resume is refused naming the directory and whose it is,
// and restores nothing from it.
BOOST_AUTO_TEST_CASE(an_unmarked_old_directory_is_adopted_by_one_store_and_refused_to_another) {
  temp_dir dir, home_a, home_b;
  const std::string file = regression_experiment(dir, "0.01", 2);
  for (const temp_dir* home : {&home_a, &home_b}) {
    setenv("DTRAIN_HOME", home->path().c_str(), 1);
    ran r = run_dtrain({"train", file}, dir.file("first.log"));
    BOOST_TEST_REQUIRE(r.code == 0, r.log);
  }
  const std::string old = dir.file("ckpt/1");
  std::filesystem::rename(row_of(home_a, 1).storage, old);
  std::filesystem::remove(old + "/" + checkpoint::owner_file);
  set_storage(home_a, 1, old);
  set_storage(home_b, 1, old);
  const auto files = files_under(old);

  setenv("DTRAIN_HOME", home_a.path().c_str(), 1);
  ran a = run_dtrain({"train", file, "--resume", "1"}, dir.file("a.log"));
  BOOST_TEST_REQUIRE(a.code == 0, a.log);
  BOOST_TEST(a.log.find(old + " carried no owner marker") != std::string::npos, a.log);
  BOOST_TEST(a.log.find("experiment 1 adopts it") != std::string::npos, a.log);
  BOOST_TEST(checkpoint::read_owner(old).is_ok());

  setenv("DTRAIN_HOME", home_b.path().c_str(), 1);
  const auto adopted = files_under(old);
  ran b = run_dtrain({"train", file, "--resume", "1"}, dir.file("b.log"));
  BOOST_TEST(b.code != 0, b.log);
  BOOST_TEST(b.log.find("the checkpoint directory " + old + " belongs to experiment 1") !=
                 std::string::npos,
             b.log);
  BOOST_TEST(b.log.find(home_a.file("experiments.db")) != std::string::npos, b.log);
  BOOST_TEST(b.log.find("resumed from") == std::string::npos, b.log);
  BOOST_TEST((files_under(old) == adopted));
  BOOST_TEST(adopted.size() == files.size() + 1, "the marker was added, nothing else changed");
}

BOOST_AUTO_TEST_CASE(each_run_is_a_new_experiment_and_a_changed_file_never_inherits_checkpoints) {
  home_dir home;
  temp_dir dir;
  const std::string first = regression_experiment(dir, "0.01", 3);
  ran a = run_dtrain({"train", first}, dir.file("a.log"));
  BOOST_TEST_REQUIRE(a.code == 0, a.log);
  ran b = run_dtrain({"train", first}, dir.file("b.log"));
  BOOST_TEST_REQUIRE(b.code == 0, b.log);
  BOOST_TEST(experiment_id_in(a.log) == 1);
  BOOST_TEST(experiment_id_in(b.log) == 2);
  // The second run trained its own 3 epochs; it did not resume the first.
  BOOST_TEST(b.log.find("epoch 1/3") != std::string::npos, b.log);
  BOOST_TEST(b.log.find("resumed") == std::string::npos, b.log);
  // The first-issue case: the learning rate changed, a new experiment that
  // trains from epoch 1 (before, it "resumed" the old run's 15 epochs).
  const std::string changed = regression_experiment(dir, "0.1", 3);
  ran c = run_dtrain({"train", changed}, dir.file("c.log"));
  BOOST_TEST_REQUIRE(c.code == 0, c.log);
  BOOST_TEST(experiment_id_in(c.log) == 3);
  BOOST_TEST(c.log.find("epoch 1/3") != std::string::npos, c.log);
  BOOST_TEST(c.log.find("lr 0.10000") != std::string::npos, c.log);
  auto s = reader(home.db());
  auto rows = s->experiments();
  BOOST_TEST_REQUIRE(rows.is_ok());
  BOOST_TEST_REQUIRE(rows->size() == 3u);
  // Checkpoints of each under <root>/<id>-<token>/00000, marked as its own.
  for (const auto& e : *rows) {
    const std::string prefix = dir.file("ckpt/" + std::to_string(e.id) + "-");
    BOOST_TEST(e.storage.rfind(prefix, 0) == 0, e.storage);
    BOOST_TEST(e.storage.size() == prefix.size() + 32, e.storage);
    BOOST_TEST(std::filesystem::exists(e.storage + "/00000"), e.storage);
    auto marker = checkpoint::read_owner(e.storage);
    BOOST_TEST_REQUIRE(marker.is_ok(), marker.error().to_string());
    BOOST_TEST(marker->experiment == e.id);
    BOOST_TEST(e.storage.substr(prefix.size()) == marker->token);
  }
  for (const auto& e : *rows) {
    BOOST_TEST(e.state == "completed");
    BOOST_TEST(e.kind == "train");
    auto trials = s->trials(e.id);
    BOOST_TEST_REQUIRE(trials.is_ok());
    BOOST_TEST_REQUIRE(trials->size() == 1u);
    BOOST_TEST(trials->front().epochs == 3);
    BOOST_TEST(std::isfinite(trials->front().last));
  }
  BOOST_TEST((*rows)[0].config_hash == (*rows)[1].config_hash);
  BOOST_TEST((*rows)[0].config_hash != (*rows)[2].config_hash);
}

BOOST_AUTO_TEST_CASE(a_resume_of_a_changed_file_is_refused_naming_the_keys_unless_forced) {
  home_dir home;
  temp_dir dir;
  ran a = run_dtrain({"train", regression_experiment(dir, "0.01", 2)}, dir.file("a.log"));
  BOOST_TEST_REQUIRE(a.code == 0, a.log);
  const std::string changed = regression_experiment(dir, "0.1", 4);
  ran refused = run_dtrain({"train", changed, "--resume", "1"}, dir.file("refused.log"));
  BOOST_TEST(refused.code != 0);
  BOOST_TEST(refused.log.find("hyperparameters.lr: 0.01 -> 0.1") != std::string::npos, refused.log);
  BOOST_TEST(refused.log.find("epochs: 2 -> 4") != std::string::npos, refused.log);
  BOOST_TEST(refused.log.find("--force") != std::string::npos, refused.log);
  // An unknown id, and a train experiment resumed by tune, are named.
  ran unknown = run_dtrain({"train", changed, "--resume", "9"}, dir.file("unknown.log"));
  BOOST_TEST(unknown.code != 0);
  BOOST_TEST(unknown.log.find("9") != std::string::npos, unknown.log);
  // Forced: experiment 1 goes on from its checkpoint at epoch 2 to epoch 4.
  ran forced = run_dtrain({"train", changed, "--resume", "1", "--force"}, dir.file("forced.log"));
  BOOST_TEST_REQUIRE(forced.code == 0, forced.log);
  BOOST_TEST(forced.log.find("resumed from the newest valid checkpoint") != std::string::npos,
             forced.log);
  BOOST_TEST(forced.log.find("epoch 1/4") == std::string::npos, forced.log);
  BOOST_TEST(forced.log.find("epoch 3/4") != std::string::npos, forced.log);
  auto s = reader(home.db());
  auto e = s->experiment(1);
  BOOST_TEST_REQUIRE(e.is_ok());
  BOOST_TEST(e->state == "completed");
  auto trials = s->trials(1);
  BOOST_TEST_REQUIRE(trials.is_ok());
  BOOST_TEST(trials->front().epochs == 4);
  auto experiments = s->experiments();
  BOOST_TEST(experiments->size() == 1u);  // no new experiment was made by the refusals
}

// A driver killed right after it made the experiment may have lost the
// trial's creation with it: the resume creates the trial's row (with its
// creation number), instead of writing one that was never created.
BOOST_AUTO_TEST_CASE(a_resume_whose_trial_was_never_recorded_creates_it) {
  home_dir home;
  temp_dir dir;
  const std::string file = regression_experiment(dir, "0.01", 2);
  ran a = run_dtrain({"train", file}, dir.file("a.log"));
  BOOST_TEST_REQUIRE(a.code == 0, a.log);
  {
    auto opened = experiments::open_sqlite_store(home.db());
    BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
    experiments::experiment_row e = (*opened)->experiment(1).value();
    e.state = "running";
    e.owner.clear();
    e.storage.clear();
    BOOST_TEST_REQUIRE((*opened)->create_experiment(e).value() == 2);
  }
  ran resumed = run_dtrain({"train", file, "--resume", "2"}, dir.file("resumed.log"));
  BOOST_TEST_REQUIRE(resumed.code == 0, resumed.log);
  auto s = reader(home.db());
  auto trials = s->trials(2);
  BOOST_TEST_REQUIRE(trials.is_ok());
  BOOST_TEST_REQUIRE(trials->size() == 1u);
  BOOST_TEST(trials->front().seq_created > 0);
  BOOST_TEST(trials->front().seq_created < trials->front().seq_ended);
  BOOST_TEST(trials->front().state == "TERMINATED");
}

// `dtrain train` records its one trial as `dtrain tune` records each of
// its trials: the same metric names every epoch, the operator's own ones
// included (fp16 training adds loss_scale and skipped_steps beside the
// built-in metrics; before, `dtrain train` printed them and never stored
// them).
BOOST_AUTO_TEST_CASE(train_stores_the_same_metrics_as_a_tune_trial_the_operators_own_included) {
  home_dir home;
  temp_dir dir;
  const std::string common = "operator: linear_regression\n"
                             "global_batch_size: 32\n"
                             "optimizations: {precision: fp16}\n"
                             "resources: {slots_per_trial: 1}\n"
                             "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n"
                             "seed: 5\n";
  const std::string train_file = dir.file("train.yaml");
  testing::write_file(train_file, "name: fp16-train\n" + common +
                                      "hyperparameters: {lr: 0.01, samples: 1000, features: 4}\n"
                                      "epochs: 2\n");
  const std::string tune_file = dir.file("tune.yaml");
  testing::write_file(tune_file, "name: fp16-tune\n" + common +
                                     "hyperparameters:\n"
                                     "  lr: {type: categorical, vals: [0.01]}\n"
                                     "  samples: 1000\n"
                                     "  features: 4\n"
                                     "searcher:\n"
                                     "  name: grid\n"
                                     "  metric: validation_loss\n"
                                     "  max_length: {epochs: 2}\n");
  ran trained = run_dtrain({"train", train_file, "--embedded"}, dir.file("train.log"));
  BOOST_TEST_REQUIRE(trained.code == 0, trained.log);
  BOOST_TEST(trained.log.find("loss_scale") != std::string::npos, trained.log);
  ran tuned = run_dtrain({"tune", tune_file, "--embedded", "--local-slots", "1"},
                         dir.file("tune.log"));
  BOOST_TEST_REQUIRE(tuned.code == 0, tuned.log);
  const int64_t train_id = experiment_id_in(trained.log), tune_id = experiment_id_in(tuned.log);
  BOOST_TEST_REQUIRE(train_id != tune_id);
  // Metric names by epoch, per experiment.
  auto s = reader(home.db());
  auto names_by_epoch = [&](int64_t id) {
    std::map<int64_t, std::set<std::string>> out;
    auto rows = s->metrics(id);
    BOOST_TEST_REQUIRE(rows.is_ok(), rows.error().to_string());
    for (const auto& m : *rows)
      out[m.epoch].insert(m.name);
    return out;
  };
  const auto train_names = names_by_epoch(train_id), tune_names = names_by_epoch(tune_id);
  BOOST_TEST_REQUIRE(train_names.size() == 2u);
  for (const auto& [epoch, names] : train_names) {
    BOOST_TEST(names.count("loss_scale") == 1u, "epoch " << epoch);
    BOOST_TEST(names.count("skipped_steps") == 1u, "epoch " << epoch);
    BOOST_TEST(names.count("validation_loss") == 1u, "epoch " << epoch);
  }
  BOOST_TEST((train_names == tune_names));
  auto trial = s->trials(train_id);
  BOOST_TEST_REQUIRE(trial.is_ok());
  BOOST_TEST_REQUIRE(trial->size() == 1u);
  BOOST_TEST(trial->front().state == "TERMINATED");
  BOOST_TEST(trial->front().epochs == 2);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sweep_resume)

BOOST_AUTO_TEST_CASE(a_sweep_whose_driver_is_killed_resumes_to_the_same_trials_and_decisions) {
  home_dir home;
  temp_dir dir;
  const std::string sweep = sweep_experiment(dir);
  ran whole = run_dtrain({"tune", sweep, "--local-slots", "1", "--verbosity", "1"}, dir.file("whole.log"));
  BOOST_TEST_REQUIRE(whole.code == 0, whole.log);
  BOOST_TEST(experiment_id_in(whole.log) == 1);

  // The same sweep again, its driver killed once 14 reports are stored.
  int64_t killed_id = 0;
  {
    child_process tune({DTRAIN_BINARY, "tune", sweep, "--local-slots", "1", "--verbosity", "1"},
                       dir.file("killed.log"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    size_t stored = 0;
    while (std::chrono::steady_clock::now() < deadline && tune.running()) {
      std::this_thread::sleep_for(milliseconds(20));
      if (!std::filesystem::exists(home.db()))
        continue;
      experiments::sqlite_options o;
      o.read_only = true;
      auto s = experiments::open_sqlite_store(home.db(), o);
      if (!s)
        continue;
      auto m = (*s)->metrics(2);
      // One report is several rows (loss, ..., samples_per_second, ...):
      // count its validation_loss.
      stored = 0;
      if (m)
        for (const auto& row : *m)
          stored += row.name == "validation_loss";
      if (stored >= 14)
        break;
    }
    BOOST_TEST_REQUIRE(stored >= 14u, "only " << stored << " reports stored before the sweep ended");
    BOOST_TEST_REQUIRE(tune.stop(SIGKILL, milliseconds(10000)));
    killed_id = 2;
  }
  auto before = outcome_of(*reader(home.db()), killed_id);
  BOOST_TEST(before.states.size() < 10u, "the sweep ended before the kill");
  int ended_before = 0;
  for (const auto& [trial, state] : before.states)
    ended_before += state == "STOPPED" || state == "TERMINATED";
  BOOST_TEST_MESSAGE("killed with " << before.states.size() << " trials created, " << ended_before
                                    << " ended");
  BOOST_TEST(reader(home.db())->experiment(killed_id)->state == "running");
  // The newest checkpoint each unfinished trial left on disk.
  std::map<std::string, int> newest_checkpoint;
  for (const auto& [trial, state] : before.states) {
    if (state == "STOPPED" || state == "TERMINATED")
      continue;
    auto saved = checkpoint::checkpoint_dirs(reader(home.db())->experiment(killed_id)->storage +
                                             "/" + trial);  // not a save cut short (.tmp-*)
    newest_checkpoint[trial] = saved.empty() ? 0 : static_cast<int>(saved.rbegin()->first);
  }

  ran resumed = run_dtrain({"tune", sweep, "--resume", std::to_string(killed_id), "--local-slots", "1",
                            "--verbosity", "1"},
                           dir.file("resumed.log"));
  BOOST_TEST_REQUIRE(resumed.code == 0, resumed.log);
  BOOST_TEST(resumed.log.find("resuming experiment 2") != std::string::npos, resumed.log);
  // The trial that was running when the driver died (if the kill did not
  // fall between two trials) went on: from its newest checkpoint no newer
  // than its last stored report, else from its first epoch, its reports
  // through that one not heard twice (below).
  if (before.states.size() > static_cast<size_t>(ended_before))
    BOOST_TEST(resumed.log.find(" resumed from ") != std::string::npos, resumed.log);
  // Where its newest checkpoint (the experiment keeps one) is of its last
  // stored report or of the epoch after (whose report, lost with the
  // driver, the checkpoint's manifest gives back), it went on from there,
  // not from its first epoch. (A newer one, when the store was more than
  // an epoch behind, is trained again from the start, its reports heard once.)
  for (const auto& [trial, newest] : newest_checkpoint) {
    auto stored = before.reports.find(trial);
    const int reported = stored == before.reports.end() ? 0 : stored->second;
    BOOST_TEST_MESSAGE("trial " << trial << ": " << reported << " reports stored, newest checkpoint "
                                << newest);
    if (newest >= 1 && newest <= reported + 1)
      BOOST_TEST(resumed.log.find("trial " + trial + " resumed from its first epoch") ==
                     std::string::npos,
                 resumed.log);
  }

  auto s = reader(home.db());
  const sweep_outcome a = outcome_of(*s, 1), b = outcome_of(*s, killed_id);
  BOOST_TEST(a.configs.size() == 10u);
  BOOST_TEST((a.configs == b.configs));
  BOOST_TEST((a.states == b.states));
  BOOST_TEST((a.epochs == b.epochs));
  for (const auto& [trial, value] : a.best)
    BOOST_TEST(std::abs(b.best.at(trial) - value) <= 1e-9 * std::max(1.0, std::abs(value)),
               "trial " << trial << ": " << value << " vs " << b.best.at(trial));
  // Trials that had ended before the kill were not run again, and the one
  // that was running did not report its epochs twice: each epoch of each
  // trial was reported once, as in the sweep that ran through.
  for (const auto& [trial, count] : a.reports) {
    auto it = b.reports.find(trial);
    const int resumed_count = it == b.reports.end() ? 0 : it->second;
    BOOST_TEST(resumed_count == count, "trial " << trial << ": " << count
                                                << " epochs reported in the whole sweep, "
                                                << resumed_count << " in the resumed one");
  }
  BOOST_TEST(a.reports.size() == b.reports.size());
  int stopped = 0;
  for (const auto& [trial, state] : a.states)
    stopped += state == "STOPPED";
  BOOST_TEST(stopped > 0, "ASHA stopped nothing: the check would prove little");
  BOOST_TEST(s->experiment(killed_id)->state == "completed");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // experiment_runs
