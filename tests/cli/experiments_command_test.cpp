// `dtrain experiments` end to end: the built binary, run with a temporary
// DTRAIN_HOME, over a store filled through the experiment_store interface.
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include <signal.h>
#include <unistd.h>

#include "support/child_process.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/experiments/store.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

namespace pt = boost::property_tree;

/// A DTRAIN_HOME with a store of two experiments: 1 a sweep of three
/// trials (validation_loss, min) with checkpoints under its storage
/// directory (named and marked as `dtrain tune` does), 2 a one-trial
/// train run.
struct filled_home {
  temp_dir home;
  std::string token = "0123456789abcdef0123456789abcdef";
  std::string storage = home.file("checkpoints/1-" + token);
  int runs = 0;

  filled_home() {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    unsetenv("DTRAIN_ADDRESS");
    auto opened = experiments::open_sqlite_store(home.file("experiments.db"));
    BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
    fill(**opened);
  }

  void fill(experiments::experiment_store& s) {
    experiments::experiment_row e;
    e.name = "sweep.yaml";
    e.kind = "tune";
    e.configuration = "name: sweep\nsearcher:\n  name: random\n";
    e.config_hash = "00000000000000aa";
    e.state = "completed";
    e.storage = storage;
    e.metric = "validation_loss";
    e.minimize = true;
    e.created_at = 1700000000;
    BOOST_REQUIRE(s.create_experiment(e).value() == 1);
    e.name = "train.yaml";
    e.kind = "train";
    e.storage = "";
    BOOST_REQUIRE(s.create_experiment(e).value() == 2);
    const char* ids[] = {"00001", "00002", "00003"};
    double bests[] = {0.5, 0.25, experiments::no_value};
    for (int i = 0; i < 3; ++i) {
      experiments::trial_row t;
      t.experiment = 1;
      t.id = ids[i];
      t.seq_created = i + 1;
      t.hyperparameters = "{\"lr\": 0.00" + std::to_string(i + 1) + "}";
      t.state = i < 2 ? "completed" : "failed";
      t.best = bests[i];
      t.last = bests[i];
      t.epochs = 3;
      t.error = i < 2 ? "" : "replica 0: " + std::string(200, 'e') + " the end";
      BOOST_REQUIRE(s.put_trial(t).is_ok());
      for (int epoch = 1; epoch <= 3; ++epoch) {
        experiments::metric_row m;
        m.experiment = 1;
        m.trial = ids[i];
        m.epoch = epoch;
        m.name = "validation_accuracy";
        m.value = i == 0 ? 0.9 : 0.5 + epoch * 0.01;  // 00001 is best by accuracy
        m.seq = 10 * epoch + i;
        BOOST_REQUIRE(s.add_metrics({m}).is_ok());
      }
    }
    std::filesystem::create_directories(storage + "/00002");
    dtrain::testing::write_file(storage + "/00002/weights", "x");
    BOOST_REQUIRE(checkpoint::write_owner(
        storage, {token, 1, checkpoint::created_text(1700000000), s.where(), "sweep.yaml"}).is_ok());
    for (int epoch = 1; epoch <= 3; ++epoch) {
      experiments::checkpoint_row c;
      c.experiment = 1;
      c.trial = "00002";
      c.epoch = epoch;
      c.path = storage + "/00002/epoch-" + std::to_string(epoch);
      c.valid = epoch < 3;  // the newest valid one is epoch 2
      c.seq = 100 + epoch;
      BOOST_REQUIRE(s.put_checkpoint(c).is_ok());
    }
    experiments::lineage_row l;  // a PBT exploit: 00001 copied 00002
    l.experiment = 1;
    l.trial = "00001";
    l.seq = 200;
    l.epoch = 2;
    l.source = "00002";
    l.source_epoch = 2;
    l.before = "{\"lr\": 0.01}";
    l.after = "{\"lr\": 0.0016}";
    BOOST_REQUIRE(s.add_lineage(l).is_ok());
    // 00002's group lost a replica in epoch 3 and ran again.
    // fields: experiment, trial, seq, epoch, time, kind, message
    BOOST_REQUIRE(s.add_event({1, "00002", 300, 3, 1700000000, "failure",
                               "failure 1 of at most 3: replica 1 (node b) died"}).is_ok());
    BOOST_REQUIRE(s.add_event({1, "00002", 301, 3, 1700000001, "recovered",
                               "running again with 2 of 2 replicas (generation 1) from the "
                               "checkpoint of epoch 2"}).is_ok());
    BOOST_REQUIRE(s.flush().is_ok());
  }

  /// Runs `dtrain experiments ARGS...` with stdin from /dev/null; its
  /// exit code, and its output (stdout and stderr) in `out`.
  /// Rewrites experiment `id`'s row through `change`.
  template <class Change>
  void change_row(int64_t id, Change change) {
    auto opened = experiments::open_sqlite_store(home.file("experiments.db"));
    BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
    experiments::experiment_row e = (*opened)->experiment(id).value();
    change(e);
    BOOST_REQUIRE((*opened)->update_experiment(e).is_ok());
    BOOST_REQUIRE((*opened)->flush().is_ok());
  }

  int run(const std::vector<std::string>& args, std::string& out) {
    std::vector<std::string> argv{DTRAIN_BINARY, "experiments"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string log = home.file("run" + std::to_string(++runs) + ".log");
    child_process p(argv, log, "/dev/null");
    int code = p.wait(milliseconds(30000));
    out = read_file(log);
    BOOST_TEST_MESSAGE("dtrain experiments ... -> " << code << "\n" << out);
    return code;
  }

  pt::ptree json(const std::vector<std::string>& args) {
    std::string out;
    BOOST_REQUIRE(run(args, out) == 0);
    std::istringstream in(out);
    pt::ptree tree;
    BOOST_REQUIRE_NO_THROW(pt::read_json(in, tree));
    return tree;
  }
};

/// Adds a sweep over lr and dummy whose validation_loss only lr decides:
/// `completed` completed trials, plus one stopped and one failed trial
/// (which importance must leave out). Returns its id.
int64_t add_importance_sweep(filled_home& h, int completed) {
  auto opened = experiments::open_sqlite_store(h.home.file("experiments.db"));
  BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
  experiments::experiment_store& s = **opened;
  experiments::experiment_row e;
  e.name = "importance.yaml";
  e.kind = "tune";
  e.configuration =
      "name: importance\nglobal_batch_size: 32\nhyperparameters:\n"
      "  lr: {type: double, minval: 0.0, maxval: 1.0}\n"
      "  dummy: {type: double, minval: 0.0, maxval: 1.0}\n"
      "searcher: {name: random, metric: validation_loss, max_trials: 50, "
      "max_length: {epochs: 1}}\n";
  e.state = "completed";
  e.metric = "validation_loss";
  e.minimize = true;
  const int64_t id = s.create_experiment(e).value();
  for (int i = 0; i < completed + 2; ++i) {
    experiments::trial_row t;
    t.experiment = id;
    t.id = std::to_string(10000 + i).substr(1);
    t.seq_created = i + 1;
    const double lr = (i * 37 % 101) / 100.0, dummy = (i * 61 % 103) / 102.0;
    t.hyperparameters = "{\"dummy\": " + std::to_string(dummy) + ", \"lr\": " +
                        std::to_string(lr) + "}";
    const bool left_out = i >= completed;
    t.state = left_out ? (i == completed ? "stopped" : "error") : "terminated";
    t.end_how = left_out ? (i == completed ? "stopped" : "failed") : "completed";
    t.last = t.best = left_out ? 100.0 + dummy : 10 * (lr - 0.3) * (lr - 0.3);
    t.epochs = 1;
    BOOST_REQUIRE(s.put_trial(t).is_ok());
  }
  BOOST_REQUIRE(s.flush().is_ok());
  return id;
}

/// mo: adds a sweep on two objectives (validation_accuracy max, params
/// min) of four trials whose last epoch decides: a (0.9, 100), b (0.8,
/// 150, dominated by a), c (0.95, 300), d (0.7, 10). Returns its id.
int64_t add_two_objective_sweep(filled_home& h) {
  auto opened = experiments::open_sqlite_store(h.home.file("experiments.db"));
  BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
  experiments::experiment_store& s = **opened;
  experiments::experiment_row e;
  e.name = "mo.yaml";
  e.kind = "tune";
  e.configuration =
      "name: mo\nglobal_batch_size: 32\nhyperparameters:\n"
      "  lr: {type: double, minval: 0.0, maxval: 1.0}\n"
      "searcher: {name: nsga2, max_trials: 4, metrics: [{name: validation_accuracy, mode: max}, "
      "{name: params, mode: min}]}\n";
  e.state = "completed";
  e.metric = "validation_accuracy";
  const int64_t id = s.create_experiment(e).value();
  const char* ids[] = {"a", "b", "c", "d"};
  const double accuracy[] = {0.9, 0.8, 0.95, 0.7}, params[] = {100, 150, 300, 10};
  for (int i = 0; i < 4; ++i) {
    experiments::trial_row t;
    t.experiment = id;
    t.id = ids[i];
    t.seq_created = i + 1;
    t.hyperparameters = "{\"lr\": 0." + std::to_string(i + 1) + "}";
    t.state = "terminated";
    t.epochs = 2;
    BOOST_REQUIRE(s.put_trial(t).is_ok());
    for (int epoch = 1; epoch <= 2; ++epoch)  // epoch 1: all equal, b the best
      BOOST_REQUIRE(s.add_metrics({{id, ids[i], epoch, "validation_accuracy",
                                    epoch == 1 ? 0.5 + (i == 1) : accuracy[i], 10 * epoch + i, 0},
                                   {id, ids[i], epoch, "params", epoch == 1 ? 1.0 : params[i],
                                    10 * epoch + i, 0}})
                        .is_ok());
  }
  BOOST_REQUIRE(s.flush().is_ok());
  return id;
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiments_command)

BOOST_AUTO_TEST_CASE(best_of_a_multi_objective_sweep_is_its_pareto_set) {
  filled_home h;
  const int64_t id = add_two_objective_sweep(h);
  std::string out;
  BOOST_REQUIRE(h.run({"best", std::to_string(id)}, out) == 0);
  BOOST_TEST(out.find("Pareto set of experiment " + std::to_string(id) +
                      " by validation_accuracy (max), params (min): 3 trial(s)") !=
                 std::string::npos,
             out);
  BOOST_TEST(out.find("  b  ") == std::string::npos, out);
  auto tree = h.json({"best", std::to_string(id), "--json"});
  std::vector<std::string> ids;
  for (const auto& t : tree.get_child("pareto"))
    ids.push_back(t.second.get<std::string>("id"));
  BOOST_TEST(ids == (std::vector<std::string>{"a", "c", "d"}));
  // A named metric ranks by it alone, as before.
  BOOST_REQUIRE(h.run({"best", std::to_string(id), "--metric", "params"}, out) == 0);
  BOOST_TEST(out.find("Pareto") == std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(a_missing_store_says_none_exists_yet_and_where_it_looked) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  unsetenv("DTRAIN_ADDRESS");
  std::string log = home.file("out.log");
  child_process p({DTRAIN_BINARY, "experiments", "list"}, log, "/dev/null");
  BOOST_TEST(p.wait(milliseconds(30000)) == 1);
  std::string out = read_file(log);
  BOOST_TEST(out.find("no experiment store exists yet") != std::string::npos, out);
  BOOST_TEST(out.find(home.file("experiments.db")) != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(list_prints_a_table_and_its_json_reads_back) {
  filled_home h;
  std::string out;
  BOOST_REQUIRE(h.run({"list"}, out) == 0);
  BOOST_TEST(out.find("ID  NAME        KIND   STATE      TRIALS  BEST") == 0u, out);
  BOOST_TEST(out.find("sweep.yaml") != std::string::npos);
  BOOST_TEST(out.find("0.25 (validation_loss)") != std::string::npos);
  auto tree = h.json({"list", "--json"});
  std::vector<pt::ptree> rows;
  for (auto& [key, row] : tree)
    rows.push_back(row);
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].get<int>("id") == 1);
  BOOST_TEST(rows[0].get<std::string>("name") == "sweep.yaml");
  BOOST_TEST(rows[0].get<int>("trials") == 3);
  BOOST_TEST(rows[0].get<double>("best") == 0.25);
  BOOST_TEST(rows[0].get<std::string>("best_trial") == "00002");
  BOOST_TEST(rows[1].get<std::string>("kind") == "train");
}

BOOST_AUTO_TEST_CASE(show_and_trials_print_the_experiment_and_its_trials) {
  filled_home h;
  std::string out;
  BOOST_REQUIRE(h.run({"show", "1"}, out) == 0);
  BOOST_TEST(out.find("searcher:\n  name: random") != std::string::npos, out);
  BOOST_TEST(out.find("3 (2 completed, 1 failed)") != std::string::npos, out);
  BOOST_TEST(out.find("trial 00002") != std::string::npos, out);
  BOOST_TEST(out.find("trial 00001 at epoch 2 copied trial 00002's epoch 2: {\"lr\": 0.01} -> "
                      "{\"lr\": 0.0016}") != std::string::npos, out);
  BOOST_TEST(out.find("trial 00002 epoch 3 failure: failure 1 of at most 3: replica 1 (node b) "
                      "died\n  trial 00002 epoch 3 recovered: running again") != std::string::npos,
             out);
  auto shown = h.json({"show", "1", "--json"});
  BOOST_TEST(shown.get<double>("lineage..after.lr", 0) == 0.0016);
  std::vector<pt::ptree> events;
  for (auto& [key, row] : shown.get_child("events"))
    events.push_back(row);
  BOOST_REQUIRE(events.size() == 2u);
  BOOST_TEST(events[0].get<std::string>("kind") == "failure");
  BOOST_TEST(events[0].get<int>("epoch") == 3);
  BOOST_TEST(events[1].get<std::string>("kind") == "recovered");
  BOOST_TEST(events[1].get<int>("seq") == 301);
  BOOST_REQUIRE(h.run({"trials", "1"}, out) == 0);
  BOOST_TEST(out.find("the end") == std::string::npos, "errors are shortened in the table");
  auto trials = h.json({"trials", "1", "--json"});
  std::vector<pt::ptree> rows;
  for (auto& [key, row] : trials)
    rows.push_back(row);
  BOOST_REQUIRE(rows.size() == 3u);
  BOOST_TEST(rows[1].get<double>("hyperparameters.lr") == 0.002);
  BOOST_TEST(rows[2].get<std::string>("best") == "null");
  BOOST_TEST(rows[2].get<std::string>("error").find("the end") != std::string::npos,
             "in full in JSON");
}

BOOST_AUTO_TEST_CASE(best_ranks_by_the_experiment_metric_or_by_a_named_one) {
  filled_home h;
  std::string out;
  BOOST_REQUIRE(h.run({"best", "1"}, out) == 0);
  BOOST_TEST(out.find(": 00002") != std::string::npos, out);
  BOOST_TEST(out.find("validation_loss (min)") != std::string::npos, out);
  BOOST_TEST(out.find(h.storage + "/00002/epoch-2") != std::string::npos, out);
  BOOST_REQUIRE(h.run({"best", "1", "--metric", "validation_accuracy"}, out) == 0);
  BOOST_TEST(out.find(": 00001") != std::string::npos, out);
  BOOST_TEST(out.find("(max)") != std::string::npos, out);
  auto best = h.json({"best", "1", "--json"});
  BOOST_TEST(best.get<std::string>("trial.id") == "00002");
  BOOST_TEST(best.get<std::string>("checkpoint") == h.storage + "/00002/epoch-2");
}

BOOST_AUTO_TEST_CASE(compare_puts_best_trials_side_by_side_and_names_what_the_files_change) {
  filled_home h;
  // Experiment 2 becomes a TPE sweep of one trial, ranked by accuracy.
  h.change_row(2, [](experiments::experiment_row& e) {
    e.configuration = "name: sweep\nsearcher:\n  name: tpe\n  max_trials: 1\n";
    e.metric = "validation_accuracy";
    e.minimize = false;
  });
  {
    auto opened = experiments::open_sqlite_store(h.home.file("experiments.db"));
    BOOST_REQUIRE(opened.is_ok());
    experiments::trial_row t;
    t.experiment = 2;
    t.id = "00001";
    t.seq_created = 1;
    t.hyperparameters = "{\"lr\": 0.03, \"width\": 64}";
    t.state = "completed";
    t.best = t.last = 0.875;
    t.epochs = 4;
    BOOST_REQUIRE((*opened)->put_trial(t).is_ok());
    BOOST_REQUIRE((*opened)->flush().is_ok());
  }
  std::string out;
  BOOST_REQUIRE(h.run({"compare", "1", "2"}, out) == 0);
  BOOST_TEST(out.find("1 sweep.yaml") != std::string::npos, out);
  BOOST_TEST(out.find("2 train.yaml") != std::string::npos, out);
  BOOST_TEST(out.find("3 (2 completed, 1 failed)") != std::string::npos, out);
  BOOST_TEST(out.find("0.25") != std::string::npos, out);
  BOOST_TEST(out.find("0.875") != std::string::npos, out);
  BOOST_TEST(out.find("  lr ") != std::string::npos, out);
  BOOST_TEST(out.find("  width ") != std::string::npos, out);
  BOOST_TEST(out.find("not comparable") != std::string::npos, out);
  BOOST_TEST(out.find("searcher.name: random -> tpe") != std::string::npos, out);
  BOOST_TEST(out.find("searcher.max_trials: (none) -> 1") != std::string::npos, out);
  auto tree = h.json({"compare", "1", "2", "--json"});
  std::vector<pt::ptree> rows;
  for (auto& [key, row] : tree.get_child("experiments"))
    rows.push_back(row);
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].get<std::string>("best_trial") == "00002");
  BOOST_TEST(rows[0].get<std::string>("best_hyperparameters.lr") == "0.002");
  BOOST_TEST(rows[0].get<int>("epochs") == 9);
  BOOST_TEST(rows[1].get<double>("best") == 0.875);
  BOOST_TEST(rows[1].get<std::string>("best_hyperparameters.width") == "64");
  BOOST_TEST(rows[1].get_child("differences_from_first").size() == 2u);
  // One id, or an unknown one: named errors.
  BOOST_TEST(h.run({"compare", "1"}, out) != 0);
  BOOST_TEST(out.find("2") != std::string::npos, out);
  BOOST_TEST(h.run({"compare", "1", "42"}, out) == 1);
  BOOST_TEST(out.find("42") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(importance_ranks_the_parameter_that_decides_the_metric_first) {
  filled_home h;
  const int64_t id = add_importance_sweep(h, 40);
  std::string out;
  BOOST_REQUIRE(h.run({"importance", std::to_string(id)}, out) == 0);
  BOOST_TEST(out.find("fanova over 40 completed trials of 42") != std::string::npos, out);
  BOOST_TEST(out.find("1     lr") != std::string::npos, out);
  BOOST_TEST(out.find("2     dummy") != std::string::npos, out);
  for (const char* method : {"fanova", "fast"}) {
    auto tree = h.json({"importance", std::to_string(id), "--json", "--method", method});
    BOOST_TEST(tree.get<std::string>("method") == method);
    BOOST_TEST(tree.get<int>("trials_used") == 40);
    auto& params = tree.get_child("parameters");
    BOOST_REQUIRE(params.size() == 2u);
    BOOST_TEST(params.front().second.get<std::string>("name") == "lr");
    BOOST_TEST(params.back().second.get<double>("importance") < 0.05);
  }
}

BOOST_AUTO_TEST_CASE(importance_names_an_unknown_id_a_train_run_and_too_few_trials) {
  filled_home h;
  std::string out;
  BOOST_TEST(h.run({"importance", "42"}, out) == 1);
  BOOST_TEST(out.find("no experiment 42") != std::string::npos, out);
  BOOST_TEST(h.run({"importance", "2"}, out) == 1);
  BOOST_TEST(out.find("experiment 2 is a `dtrain train` run") != std::string::npos, out);
  const int64_t id = add_importance_sweep(h, 1);
  BOOST_TEST(h.run({"importance", std::to_string(id)}, out) == 1);
  BOOST_TEST(out.find("has 1 completed trials with a value of validation_loss (of 3); "
                      "importance needs at least 2") != std::string::npos, out);
  BOOST_TEST(h.run({"importance", std::to_string(id), "--method", "shap"}, out) != 0);
  BOOST_TEST(out.find("shap") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(an_unknown_id_is_named_with_the_store) {
  filled_home h;
  std::string out;
  BOOST_TEST(h.run({"show", "42"}, out) == 1);
  BOOST_TEST(out.find("42") != std::string::npos, out);
  BOOST_TEST(out.find(h.home.file("experiments.db")) != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(delete_without_a_terminal_needs_yes_and_then_removes_rows_and_checkpoints) {
  filled_home h;
  std::string out;
  BOOST_TEST(h.run({"delete", "1"}, out) == 1);
  BOOST_TEST(out.find("not a terminal") != std::string::npos, out);
  BOOST_TEST(out.find("--yes") != std::string::npos, out);
  BOOST_TEST(std::filesystem::exists(h.storage), "nothing removed");
  BOOST_REQUIRE(h.run({"delete", "1", "--yes"}, out) == 0);
  BOOST_TEST(!std::filesystem::exists(h.storage));
  BOOST_TEST(std::filesystem::exists(h.home.file("experiments.db")));
  auto rest = h.json({"list", "--json"});
  BOOST_TEST(rest.size() == 1u);
  BOOST_TEST(h.run({"show", "1"}, out) == 1);
}

// What `dtrain experiments` takes for this host in an owner ("host pid").
std::string this_host() { return net::host_name(); }

// The driver of a running experiment is alive (a process of this host,
// here a stand-in): delete refuses, saying how to go on, and deletes
// nothing; --force stops the driver (SIGTERM) first, then deletes.
BOOST_AUTO_TEST_CASE(delete_refuses_a_running_experiment_whose_driver_is_alive_unless_forced) {
  filled_home h;
  child_process driver({"/bin/sleep", "600"}, h.home.file("driver.log"), "/dev/null");
  BOOST_REQUIRE(driver.running());
  h.change_row(1, [&](experiments::experiment_row& e) {
    e.state = "running";
    e.owner = this_host() + " " + std::to_string(driver.pid());
  });
  std::string out;
  BOOST_TEST(h.run({"delete", "1", "--yes"}, out) == 1);
  BOOST_TEST(out.find("experiment 1 is running") != std::string::npos, out);
  BOOST_TEST(out.find("process " + std::to_string(driver.pid())) != std::string::npos, out);
  BOOST_TEST(out.find("--force") != std::string::npos, out);
  BOOST_TEST(out.find("nothing was deleted") != std::string::npos, out);
  BOOST_TEST(std::filesystem::exists(h.storage + "/00002/weights"));
  BOOST_TEST(h.run({"show", "1"}, out) == 0, "the rows are still there");
  BOOST_TEST(driver.running());

  BOOST_REQUIRE(h.run({"delete", "1", "--yes", "--force"}, out) == 0);
  BOOST_TEST(out.find("asking the driver of experiment 1") != std::string::npos, out);
  BOOST_TEST(!driver.running(), "the driver was stopped");
  BOOST_TEST(!std::filesystem::exists(h.storage));
  BOOST_TEST(h.run({"show", "1"}, out) == 1);
}

// A running experiment whose driver died (no such process) is stale:
// deleted without --force.
BOOST_AUTO_TEST_CASE(delete_of_a_running_experiment_whose_driver_died_goes_ahead) {
  filled_home h;
  pid_t dead = 0;
  {
    child_process gone({"/bin/true"}, h.home.file("gone.log"), "/dev/null");
    BOOST_REQUIRE(gone.wait(milliseconds(10000)) == 0);
    dead = gone.pid();
  }
  h.change_row(1, [&](experiments::experiment_row& e) {
    e.state = "running";
    e.owner = this_host() + " " + std::to_string(dead);
  });
  std::string out;
  BOOST_REQUIRE(h.run({"delete", "1", "--yes"}, out) == 0);
  BOOST_TEST(!std::filesystem::exists(h.storage));
}

// Another store's experiment 1 (a second DTRAIN_HOME, or a row rewritten
// to point at it) names the first store's directory: deleting it there
// removes its rows but never the directory, whose marker is the first's;
// nor a directory without a marker of its own (a user's files).
BOOST_AUTO_TEST_CASE(delete_removes_only_a_directory_that_carries_the_experiments_own_marker) {
  filled_home a;
  temp_dir other;
  const std::string db = other.file("experiments.db");
  const std::string users = other.file("users-files");
  std::filesystem::create_directories(users);
  dtrain::testing::write_file(users + "/thesis.tex", "x");
  {
    auto opened = experiments::open_sqlite_store(db);
    BOOST_REQUIRE_MESSAGE(opened.is_ok(), opened.error().to_string());
    experiments::experiment_row e;
    e.name = "sweep.yaml";
    e.kind = "tune";
    e.state = "completed";
    e.created_at = 1700000500;
    e.storage = a.storage;  // the same path as store a's experiment 1
    BOOST_REQUIRE((*opened)->create_experiment(e).value() == 1);
    e.storage = users;
    BOOST_REQUIRE((*opened)->create_experiment(e).value() == 2);
    BOOST_REQUIRE((*opened)->flush().is_ok());
  }
  std::string out;
  BOOST_REQUIRE(a.run({"delete", "1", "--yes", "--store", db}, out) == 0);
  BOOST_TEST(std::filesystem::exists(a.storage + "/00002/weights"), "store a's checkpoints stay");
  BOOST_TEST(out.find("left " + a.storage + " in place") != std::string::npos, out);
  BOOST_TEST(out.find("belongs to experiment 1 (sweep.yaml) of the store " +
                      a.home.file("experiments.db")) != std::string::npos, out);
  BOOST_REQUIRE(a.run({"delete", "2", "--yes", "--store", db}, out) == 0);
  BOOST_TEST(std::filesystem::exists(users + "/thesis.tex"));
  BOOST_TEST(out.find("carries no owner marker") != std::string::npos, out);
  BOOST_TEST(a.run({"show", "1", "--store", db}, out) == 1, "its rows are gone");
  // Store a's own delete still removes its own directory.
  BOOST_REQUIRE(a.run({"delete", "1", "--yes"}, out) == 0);
  BOOST_TEST(!std::filesystem::exists(a.storage));
}

BOOST_AUTO_TEST_SUITE_END()
