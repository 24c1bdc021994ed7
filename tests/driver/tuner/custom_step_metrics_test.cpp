// An operator's own metrics through the actor runtime: the trainer's
// train() and validate() carry them, a sweep ranks its trials by one
// (validation_mae) and the experiment store records them as metric rows; a
// sweep on a metric no trial reports fails its trials naming what they do
// report.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <set>

#include "support/memory_store.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "support/step_operators.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using std::chrono::milliseconds;

namespace {

trainer_config hand_loss(int replicas) {
  dtrain::testing::register_step_operators();
  trainer_config t;
  t.name = "hand-loss";
  t.operator_name = "weighted_l2_regression";
  t.config = {{"samples", "1000"}, {"lr", "0.05"}};
  t.num_replicas = replicas;
  t.global_batch_size = 64;
  t.seed = 3;
  t.collective_timeout = milliseconds(10000);
  t.placement_timeout = milliseconds(5000);
  return t;
}

std::unique_ptr<cluster> embedded(int slots) {
  set_blas_threads(1);
  cluster::options o;
  o.local_slots = slots;
  auto c = cluster::connect(o);
  BOOST_TEST_REQUIRE(c.is_ok(), c.error().to_string());
  return std::move(*c);
}

// A grid sweep over two learning rates on `metric`, recorded in `db`.
result<tune::result_grid> sweep(cluster& c, const std::string& metric,
                                std::shared_ptr<dtrain::testing::memory_store> db,
                                int64_t& experiment) {
  experiments::experiment_row e;
  e.name = "custom-metric";
  e.kind = "tune";
  DTRAIN_ASSIGN_OR_RETURN(experiment, db->create_experiment(e));
  tune_config tc;
  tc.experiment = "custom-metric";
  tc.metric = metric;
  tc.direction = tune::mode::min;
  tc.searcher = "grid";
  tc.max_epochs = 2;
  tc.max_concurrent_trials = 1;
  tc.verbosity = 0;
  tc.store = db;
  tc.experiment_id = experiment;
  tune::space s;
  s.add("lr", tune::grid_search({0.001, 0.05}));
  tuner t(c, hand_loss(1), s, tc);
  return t.fit();
}

// mo: a sweep on two objectives, validation_mae and `second` (both
// minimized), with `searcher` over three learning rates.
result<tune::result_grid> two_objective_sweep(cluster& c, const std::string& second,
                                              const std::string& searcher) {
  tune_config tc;
  tc.experiment = "two-objectives";
  tc.objectives = {{"validation_mae", tune::mode::min}, {second, tune::mode::min}};
  tc.metric = "validation_mae";
  tc.direction = tune::mode::min;
  tc.searcher = searcher;
  tc.num_samples = searcher == "grid" ? 1 : 3;
  tc.nsga2_population_size = 2;
  tc.max_epochs = 1;
  tc.max_concurrent_trials = 1;
  tc.verbosity = 0;
  tune::space s;
  if (searcher == "grid")
    s.add("lr", tune::grid_search({0.001, 0.05}));
  else
    s.add("lr", tune::choice({0.001, 0.01, 0.05}));
  tuner t(c, hand_loss(1), s, tc);
  return t.fit();
}

} // namespace

BOOST_AUTO_TEST_SUITE(custom_step_metrics)

BOOST_AUTO_TEST_CASE(the_trainer_reports_the_operators_own_metrics_in_training_and_validation) {
  auto c = embedded(2);
  auto t = trainer::create(*c, hand_loss(2));
  BOOST_TEST_REQUIRE(t.is_ok(), t.error().to_string());
  auto m = (*t)->train();
  BOOST_TEST_REQUIRE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->extra.count("mae") == 1u);
  BOOST_TEST((m->extra.count("mae") == 1u && m->extra.at("mae") > 0));
  auto v = (*t)->validate();
  BOOST_TEST_REQUIRE(v.is_ok(), v.error().to_string());
  BOOST_TEST_REQUIRE(v->extra.count("mae") == 1u);
  BOOST_TEST((std::isfinite(v->extra.at("mae")) && v->extra.at("mae") > 0));
  BOOST_TEST(v->samples == 1000);
  BOOST_TEST((*t)->shutdown().is_ok());
}

BOOST_AUTO_TEST_CASE(a_sweep_ranks_trials_by_a_validation_metric_of_the_operator_and_stores_it) {
  auto c = embedded(1);
  auto db = std::make_shared<dtrain::testing::memory_store>();
  int64_t experiment = 0;
  auto g = sweep(*c, "validation_mae", db, experiment);
  BOOST_TEST_REQUIRE(g.is_ok(), g.error().to_string());
  BOOST_TEST_REQUIRE(g->trials.size() == 2u);
  for (const auto& r : g->trials) {
    BOOST_TEST((r.status == tune::trial_status::terminated), r.error);
    BOOST_TEST(r.epochs() == 2);
    BOOST_TEST(std::isfinite(r.last("validation_mae")));
  }
  // The faster rate fits better within two epochs.
  auto best = g->best();
  BOOST_TEST_REQUIRE(best.is_ok(), best.error().to_string());
  BOOST_TEST(tune::to_string((*best)->configuration.at("lr")) == "0.05");
  auto rows = db->metrics(experiment);
  BOOST_TEST_REQUIRE(rows.is_ok());
  std::set<std::string> names;
  for (const auto& row : *rows)
    names.insert(row.name);
  BOOST_TEST(names.count("mae") == 1u);
  BOOST_TEST(names.count("validation_mae") == 1u);
  BOOST_TEST(names.count("validation_loss") == 1u);
}

BOOST_AUTO_TEST_CASE(a_sweep_on_a_metric_no_trial_reports_fails_the_trials_naming_the_metric) {
  auto c = embedded(1);
  auto db = std::make_shared<dtrain::testing::memory_store>();
  int64_t experiment = 0;
  auto g = sweep(*c, "validation_rmse", db, experiment);
  BOOST_TEST_REQUIRE(g.is_ok(), g.error().to_string());
  BOOST_TEST_REQUIRE(g->trials.size() == 2u);
  for (const auto& r : g->trials) {
    BOOST_TEST((r.status == tune::trial_status::error));
    BOOST_TEST(r.error.find("metric 'validation_rmse' is not reported by operator "
                            "'weighted_l2_regression'") != std::string::npos,
               r.error);
    BOOST_TEST(r.error.find("validation_mae") != std::string::npos, r.error);
  }
}

BOOST_AUTO_TEST_CASE(a_multi_objective_sweep_fails_trials_that_lack_its_second_metric) {
  auto c = embedded(1);
  auto g = two_objective_sweep(*c, "validation_rmse", "grid");
  BOOST_TEST_REQUIRE(g.is_ok(), g.error().to_string());
  BOOST_TEST_REQUIRE(g->trials.size() == 2u);
  for (const auto& r : g->trials) {
    BOOST_TEST((r.status == tune::trial_status::error));
    BOOST_TEST(r.error.find("metric 'validation_rmse' is not reported") != std::string::npos,
               r.error);
  }
  BOOST_TEST(g->pareto().empty());
}

BOOST_AUTO_TEST_CASE(an_nsga2_sweep_on_two_metrics_ends_with_its_pareto_set) {
  auto c = embedded(1);
  auto g = two_objective_sweep(*c, "validation_loss", "nsga2");
  BOOST_TEST_REQUIRE(g.is_ok(), g.error().to_string());
  BOOST_TEST_REQUIRE(g->trials.size() == 3u);
  for (const auto& r : g->trials)
    BOOST_TEST((r.status == tune::trial_status::terminated), r.error);
  BOOST_TEST_REQUIRE(g->objectives.size() == 2u);
  const auto front = g->pareto();
  BOOST_TEST_REQUIRE(!front.empty());
  // No trial of the set is dominated by any trial of the sweep.
  for (const auto* p : front)
    for (const auto& t : g->trials)
      BOOST_TEST(!tune::dominates({t.last("validation_mae"), t.last("validation_loss")},
                                  {p->last("validation_mae"), p->last("validation_loss")}));
}

BOOST_AUTO_TEST_SUITE_END()
