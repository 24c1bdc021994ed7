// A multi-objective sweep's settings: objectives and constraints in the
// sweep_config and the experiment file (read, checked, written back),
// every scheduler but fifo and TPE refusing several objectives by name,
// nsga2 and random search made for one, and the Pareto set of a sweep's
// result (result_grid::pareto) and of a stored experiment (pareto_trials).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/pareto_rows.hpp"
#include "dtrain/experiments/store.hpp"
#include "support/test_util.hpp"
#include "dtrain/tune/sweep.hpp"
#include "dtrain/tune/trial.hpp"

namespace {

using namespace dtrain::tune;
using dtrain::experiments::parse_experiment;
using dtrain::experiments::to_yaml;

sweep_config two_objectives() {
  sweep_config c;
  c.objectives = {{"validation_loss", mode::min}, {"params", mode::min}};
  c.metric = "validation_loss";
  c.direction = mode::min;
  c.num_samples = 20;
  return c;
}

space one_range() {
  space s;
  s.add("lr", loguniform(1e-4, 1e-1));
  return s;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

trial_record trial(const std::string& id, std::map<std::string, double> last,
                   trial_status status = trial_status::terminated) {
  trial_record t;
  t.id = id;
  t.status = status;
  t.history.push_back(report{id, 1, {{"validation_loss", 9.0}, {"params", 9.0}}});
  t.history.push_back(report{id, 2, std::move(last)});
  return t;
}

std::vector<std::string> ids(const std::vector<const trial_record*>& trials) {
  std::vector<std::string> out;
  for (const auto* t : trials)
    out.push_back(t->id);
  return out;
}

const std::string space_yaml = "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n";

std::string file(const std::string& searcher) {
  return "name: tiny\nglobal_batch_size: 8\n" + space_yaml + "searcher:\n" + searcher;
}

} // namespace

BOOST_AUTO_TEST_SUITE(multi_objective_sweep)

BOOST_AUTO_TEST_CASE(every_scheduler_but_fifo_refuses_several_objectives_by_name) {
  for (const std::string scheduler : {"asha", "median", "pbt", "hyperband"}) {
    sweep_config c = two_objectives();
    c.scheduler = scheduler;
    const auto bad = validate(c);
    BOOST_TEST(!bad.is_ok());
    BOOST_TEST(contains(bad.message(), "scheduler: " + scheduler + " stops trials on one metric"),
               bad.message());
    auto made = make_scheduler(c, one_range());
    BOOST_TEST_REQUIRE(!made.is_ok(), scheduler);
    BOOST_TEST(contains(made.error().message(), "multi-objective"), made.error().message());
  }
  sweep_config fifo = two_objectives();
  BOOST_TEST(validate(fifo).is_ok(), validate(fifo).message());
  BOOST_TEST(make_scheduler(fifo, one_range()).is_ok());
  // One objective in `objectives` is a single-objective sweep: asha runs.
  sweep_config single = two_objectives();
  single.objectives.pop_back();
  single.scheduler = "asha";
  BOOST_TEST(validate(single).is_ok(), validate(single).message());
}

BOOST_AUTO_TEST_CASE(a_stop_threshold_refuses_several_objectives_tpe_takes_them) {
  sweep_config c = two_objectives();
  c.searcher = "tpe";
  BOOST_TEST(validate(c).is_ok(), validate(c).message());  // multi-objective TPE
  c = two_objectives();
  c.has_stop_threshold = true;
  c.stop_threshold = 0.1;
  BOOST_TEST(contains(validate(c).message(), "stop_threshold:"));
}

BOOST_AUTO_TEST_CASE(objectives_and_constraints_are_checked_naming_the_entry) {
  sweep_config c = two_objectives();
  c.objectives[1].metric = "validation_loss";
  BOOST_TEST(contains(validate(c).message(), "metrics[1]: 'validation_loss' is already metrics[0]"));
  c = two_objectives();
  c.objectives[1].metric = "bad name!";
  BOOST_TEST(contains(validate(c).message(), "metrics[1]"));
  c = two_objectives();
  c.metric = "params";  // not the first objective
  BOOST_TEST(contains(validate(c).message(), "metric: must be the first of metrics"));
  c = two_objectives();
  c.constraints = {{"memory", 1.0}, {"x y", 2.0}};
  BOOST_TEST(contains(validate(c).message(), "constraints[1].metric"));
  c = two_objectives();
  c.searcher = "nsga2";
  c.nsga2_population_size = 1;
  BOOST_TEST(contains(validate(c).message(), "nsga2.population_size"));
}

BOOST_AUTO_TEST_CASE(nsga2_and_random_search_are_made_for_several_objectives) {
  sweep_config c = two_objectives();
  c.searcher = "nsga2";
  BOOST_TEST_REQUIRE(validate(c).is_ok(), validate(c).message());
  auto nsga2 = make_searcher(one_range(), c);
  BOOST_TEST(nsga2->total() == 20);
  BOOST_TEST((nsga2->suggest("t0").what == suggestion::kind::trial));
  c.searcher = "random";
  BOOST_TEST(validate(c).is_ok(), validate(c).message());
  BOOST_TEST(make_searcher(one_range(), c)->total() == 20);
  BOOST_TEST(objectives_of(c).size() == 2u);
  BOOST_TEST(multi_objective(c));
  sweep_config plain;
  BOOST_TEST(objectives_of(plain).size() == 1u);
  BOOST_TEST(objectives_of(plain)[0].metric == "validation_accuracy");
  BOOST_TEST(!multi_objective(plain));
}

BOOST_AUTO_TEST_CASE(the_pareto_set_is_the_non_dominated_trials_by_their_last_values) {
  result_grid g;
  g.objectives = {{"validation_accuracy", mode::max}, {"params", mode::min}};
  g.trials = {trial("a", {{"validation_accuracy", 0.90}, {"params", 100}}),
              trial("b", {{"validation_accuracy", 0.80}, {"params", 150}}),  // dominated by a
              trial("c", {{"validation_accuracy", 0.95}, {"params", 300}}),
              trial("d", {{"validation_accuracy", 0.70}, {"params", 10}}),
              trial("e", {{"validation_accuracy", 0.99}}),  // no params: not counted
              trial("f", {{"validation_accuracy", 0.99}, {"params", 1}}, trial_status::error)};
  BOOST_TEST(ids(g.pareto()) == (std::vector<std::string>{"a", "c", "d"}));
  // A constraint params <= 200: c is infeasible, b feasible now competes
  // with a and d (a dominates it).
  g.constraints = {{"params", 200}};
  BOOST_TEST(ids(g.pareto()) == (std::vector<std::string>{"a", "d"}));
  // Nothing feasible: the smallest violation.
  g.constraints = {{"params", 5}};
  BOOST_TEST(ids(g.pareto()) == (std::vector<std::string>{"d"}));
  // Single objective: the best last value.
  result_grid one;
  one.metric = "params";
  one.direction = mode::min;
  one.trials = g.trials;
  BOOST_TEST(ids(one.pareto()) == (std::vector<std::string>{"d"}));
}

BOOST_AUTO_TEST_CASE(the_experiment_file_reads_metrics_and_constraints_and_writes_them_back) {
  auto parsed = parse_experiment(
      file("  name: nsga2\n  max_trials: 40\n  population_size: 10\n"
           "  metrics:\n    - {name: validation_accuracy}\n    - {name: params, mode: min}\n"
           "  constraints:\n    - {metric: memory_mb, max: 4000}\n"),
      "experiment.yaml");
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const sweep_config& c = parsed->sweep;
  BOOST_TEST(c.searcher == "nsga2");
  BOOST_TEST(c.nsga2_population_size == 10);
  BOOST_TEST_REQUIRE(c.objectives.size() == 2u);
  BOOST_TEST((c.objectives[0].direction == mode::max));  // an accuracy: max by default
  BOOST_TEST((c.objectives[1].direction == mode::min));
  BOOST_TEST(c.metric == "validation_accuracy");
  BOOST_TEST_REQUIRE(c.constraints.size() == 1u);
  BOOST_TEST(c.constraints[0].metric == "memory_mb");
  BOOST_TEST(c.constraints[0].bound == 4000.0);
  const std::string text = to_yaml(*parsed);
  auto again = parse_experiment(text, "again.yaml");
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(to_yaml(*again) == text);
  BOOST_TEST(contains(text, "  metrics:"), text);
  BOOST_TEST(again->sweep.objectives.size() == 2u);
  BOOST_TEST(again->sweep.constraints.size() == 1u);
  BOOST_TEST(again->sweep.nsga2_population_size == 10);
  BOOST_TEST(dtrain::experiments::searcher_name(*again) == "nsga2");
  // The single metric form still reads as before.
  auto single = parse_experiment(file("  name: random\n  max_trials: 4\n  metric: loss\n"), "s.yaml");
  BOOST_TEST_REQUIRE(single.is_ok(), single.error().to_string());
  BOOST_TEST(single->sweep.objectives.empty());
  BOOST_TEST(single->sweep.metric == "loss");
  BOOST_TEST(!contains(to_yaml(*single), "  metrics:"));
}

BOOST_AUTO_TEST_CASE(the_experiment_file_names_what_is_wrong_with_several_objectives) {
  auto error = [](const std::string& searcher) {
    auto parsed = parse_experiment(file(searcher), "experiment.yaml");
    return parsed.is_ok() ? std::string() : parsed.error().message();
  };
  BOOST_TEST(contains(error("  name: asha\n  max_trials: 4\n  metrics: [loss, params]\n"),
                      "scheduler: asha stops trials on one metric"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n  scheduler: hyperband\n"
                            "  metrics: [loss, params]\n"),
                      "scheduler: hyperband stops trials on one metric"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n  metric: loss\n"
                            "  metrics: [loss, params]\n"),
                      "searcher.metrics: give either metric"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n  metrics: []\n"),
                      "searcher.metrics"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n"
                            "  metrics: [{name: loss, mode: up}]\n"),
                      "searcher.metrics[0].mode"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n  metrics: [loss, params]\n"
                            "  constraints: [{metric: mem}]\n"),
                      "searcher.constraints[0].max: missing required key"));
  BOOST_TEST(contains(error("  name: random\n  max_trials: 4\n  population_size: 8\n"),
                      "searcher.population_size: only the nsga2 searcher uses it, not random"));
}

BOOST_AUTO_TEST_CASE(a_stored_experiment_gives_its_pareto_set_from_its_rows) {
  using namespace dtrain::experiments;
  dtrain::testing::temp_dir dir;
  auto opened = open_sqlite_store(dir.path() + "/experiments.db");
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  experiment_store& s = **opened;
  auto parsed = parse_experiment(
      file("  name: nsga2\n  max_trials: 4\n"
           "  metrics: [{name: validation_accuracy, mode: max}, {name: params, mode: min}]\n"
           "  constraints: [{metric: params, max: 200}]\n"),
      "experiment.yaml");
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  experiment_row e;
  e.name = "mo";
  e.kind = "tune";
  e.metric = "validation_accuracy";
  e.configuration = to_yaml(*parsed);
  auto id = s.create_experiment(e);
  BOOST_TEST_REQUIRE(id.is_ok(), id.error().to_string());
  // Epoch 2's values count (epoch 1's would make b the best of all).
  const std::vector<std::tuple<std::string, double, double, std::string>> last = {
      {"a", 0.90, 100, "terminated"}, {"b", 0.80, 150, "terminated"},
      {"c", 0.95, 300, "terminated"}, {"d", 0.70, 10, "terminated"},
      {"f", 0.99, 1, "error"}};
  std::vector<metric_row> rows;
  int64_t seq = 0;
  for (const auto& [trial, accuracy, params, state] : last) {
    trial_row t;
    t.experiment = *id;
    t.id = trial;
    t.state = state;
    t.seq_created = ++seq;
    BOOST_TEST_REQUIRE(s.put_trial(t).is_ok());
    for (int64_t epoch : {1, 2}) {
      ++seq;
      rows.push_back({*id, trial, epoch, "validation_accuracy", epoch == 1 ? 0.999 : accuracy, seq, 0});
      rows.push_back({*id, trial, epoch, "params", epoch == 1 ? 0.5 : params, seq, 0});
    }
  }
  BOOST_TEST_REQUIRE(s.add_metrics(rows).is_ok());
  BOOST_TEST_REQUIRE(s.flush().is_ok());
  auto front = pareto_trials(s, *id);
  BOOST_TEST_REQUIRE(front.is_ok(), front.error().to_string());
  std::vector<std::string> names;
  for (const auto& t : *front)
    names.push_back(t.id);
  // c breaks the constraint, b is dominated by a, f ended in an error.
  BOOST_TEST(names == (std::vector<std::string>{"a", "d"}));
  BOOST_TEST(!pareto_trials(s, *id + 1).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
