// Multi-objective TPE and TPE's constraints (Optuna 3.1's TPESampler on
// several objectives, and its constraints_func): the split into good and
// bad trials and the good ones' weights equal Optuna's on fixed points
// (tools/reference/optuna_tpe_split.py), and the searcher finds better
// fronts than random search and more feasible trials than without its
// constraint.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/tpe.hpp"
#include "dtrain/tune/tpe_split.hpp"

namespace {

using namespace dtrain::tune;

const std::vector<point> two_d = {
    {0.551, 0.708}, {0.291, 0.511}, {0.893, 0.896}, {0.126, 0.207}, {0.051, 0.441},
    {0.893, 0.896}, {0.649, 0.278}, {0.676, 0.591}, {0.024, 0.559}, {0.259, 0.415},
    {0.284, 0.693}, {0.44, 0.157},  {0.545, 0.78},  {0.306, 0.222}};

void same_weights(const std::vector<double>& got, const std::vector<double>& want) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(got[i] == want[i], boost::test_tools::tolerance(1e-9));
}

double number(const value& v) { return std::get<double>(v); }

// Runs trials one at a time, each reporting its objectives (and whatever
// else `f` gives) at epoch 1; returns every trial's metrics.
template <class F>
std::vector<std::map<std::string, double>> optimize(searcher& s, F f) {
  std::vector<std::map<std::string, double>> out;
  for (int i = 0;; ++i) {
    const std::string id = "t" + std::to_string(i);
    suggestion next = s.suggest(id);
    if (next.what != suggestion::kind::trial)
      break;
    out.push_back(f(next.configuration));
    s.on_result(report{id, 1, out.back()});
    s.on_end(id, trial_end::completed);
  }
  return out;
}

space unit_square() {
  space s;
  s.add("x", uniform(0, 1)).add("y", uniform(0, 1));
  return s;
}

// Two objectives with a curved front (ZDT1 in two variables).
std::map<std::string, double> zdt1(const config& c) {
  const double x = number(c.at("x")), y = number(c.at("y"));
  const double g = 1 + 9 * y;
  return {{"f1", x}, {"f2", g * (1 - std::sqrt(x / g))}};
}

tpe_options two_objective_tpe(uint64_t seed) {
  tpe_options o;
  o.metric = "f1";
  o.direction = mode::min;
  o.objectives = {{"f1", mode::min}, {"f2", mode::min}};
  o.num_samples = 60;
  o.seed = seed;
  return o;
}

double front_volume(const std::vector<std::map<std::string, double>>& trials) {
  std::vector<point> points;
  for (const auto& m : trials)
    points.push_back({m.at("f1"), m.at("f2")});
  std::vector<point> front;
  for (size_t i : pareto_front(points))
    front.push_back(points[i]);
  return hypervolume(front, {1.1, 11}).value();
}

} // namespace

BOOST_AUTO_TEST_SUITE(tpe_multi_objective)

BOOST_AUTO_TEST_CASE(the_split_and_weights_equal_optuna_3_1s) {
  using detail::below_weights;
  using detail::split_objectives;
  // Whole ranks fit: the first front's two points.
  auto two = split_objectives(two_d, 2);
  BOOST_TEST((two.below == std::vector<size_t>{3, 4}));
  same_weights(below_weights(two_d, two.below, {}), {0.8914285714613965, 1.0});
  // The first front (4 points) and one of the second by hypervolume.
  auto five = split_objectives(two_d, 5);
  BOOST_TEST((five.below == std::vector<size_t>{3, 4, 8, 11, 13}));
  same_weights(below_weights(two_d, five.below, {}),
               {1.0, 0.2005438477407529, 0.034201223679261046, 0.049852707929983114,
                2.2660321776055736e-11});
  auto nine = split_objectives(two_d, 9);
  BOOST_TEST((nine.below == std::vector<size_t>{3, 4, 8, 11, 9, 13, 1, 6, 10}));
  BOOST_TEST(nine.above.size() == 5u);
  // With violations: the feasible ones split, every infeasible one above.
  std::vector<double> violations;
  for (size_t i = 0; i < two_d.size(); ++i)
    violations.push_back(i % 3 ? 0.0 : 0.5 + static_cast<double>(i));
  auto feasible_split = [&](const std::vector<size_t>& subset, size_t n) {
    std::vector<point> part;
    for (size_t i : subset)
      part.push_back(two_d[i]);
    return split_objectives(part, n);
  };
  auto constrained = detail::split_with_violations(violations, 5, feasible_split);
  BOOST_TEST((constrained.below == std::vector<size_t>{1, 4, 8, 11, 13}));
  same_weights(below_weights(two_d, constrained.below, violations),
               {3.404834865393093e-11, 1.0, 0.051389172657426006, 0.09737827718429086,
                0.9991828396323054});
  // Three objectives.
  const std::vector<point> three_d = {
      {0.388, 0.936, 0.976}, {0.672, 0.903, 0.846}, {0.378, 0.092, 0.653}, {0.558, 0.362, 0.225},
      {0.407, 0.469, 0.269}, {0.292, 0.458, 0.861}, {0.586, 0.283, 0.278}, {0.455, 0.205, 0.201},
      {0.514, 0.087, 0.484}, {0.362, 0.708, 0.747}, {0.691, 0.689, 0.374}, {0.668, 0.34, 0.573}};
  auto seven = split_objectives(three_d, 7);
  BOOST_TEST((seven.below == std::vector<size_t>{2, 4, 5, 7, 8, 9, 3}));
  same_weights(below_weights(three_d, seven.below, {}),
               {0.7763087486227527, 0.36757340689938217, 0.14662821306964052, 1.0,
                0.13755871995118887, 0.008312818597740423, 6.437099295465077e-11});
}

BOOST_AUTO_TEST_CASE(multi_objective_tpe_finds_better_fronts_than_random_search) {
  int better = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    auto tpe = make_tpe(unit_square(), two_objective_tpe(seed));
    auto random = make_variant_searcher(unit_square(), 60, seed);
    better += front_volume(optimize(*tpe, zdt1)) > front_volume(optimize(*random, zdt1));
  }
  BOOST_TEST(better >= 8);
}

BOOST_AUTO_TEST_CASE(multi_objective_tpe_is_deterministic_and_ignores_failed_and_stopped_trials) {
  // Every fifth trial fails or is stopped: after reporting impossible
  // values (bad_reports), or without a report. Neither is an observation
  // of multi-objective TPE (Optuna skips failed and pruned trials there),
  // so both runs suggest the same; had the -100s counted, they would be
  // the best trials and pull the suggestions toward themselves.
  auto configs = [](uint64_t seed, bool bad_reports) {
    auto tpe = make_tpe(unit_square(), two_objective_tpe(seed));
    std::vector<config> out;
    for (int i = 0; i < 40; ++i) {
      const std::string id = "t" + std::to_string(i);
      suggestion next = tpe->suggest(id);
      out.push_back(next.configuration);
      if (i % 5 == 4) {
        if (bad_reports)
          tpe->on_result(report{id, 1, {{"f1", -100.0}, {"f2", -100.0}}});
        tpe->on_end(id, i % 10 == 4 ? trial_end::failed : trial_end::stopped);
        continue;
      }
      tpe->on_result(report{id, 1, zdt1(next.configuration)});
      tpe->on_end(id, trial_end::completed);
    }
    return out;
  };
  BOOST_TEST((configs(3, false) == configs(3, false)));
  BOOST_TEST((configs(3, false) != configs(4, false)));
  BOOST_TEST((configs(3, true) == configs(3, false)));
}

BOOST_AUTO_TEST_CASE(the_random_startup_counts_only_completed_trials_with_every_objective) {
  // Optuna 3.1 (_sample_relative / sample_independent): n counts the
  // observations, which with several objectives are the completed trials
  // only. Three trials ended, one of them failed and one stopped: one
  // observation, so with startup_trials 3 the 4th suggestion is still the
  // random stream's 4th draw, as a searcher that heard nothing draws it.
  tpe_options o = two_objective_tpe(5);
  o.startup_trials = 3;
  auto heard = make_tpe(unit_square(), o);
  auto silent = make_tpe(unit_square(), o);
  const trial_end ends[] = {trial_end::completed, trial_end::failed, trial_end::stopped};
  for (int i = 0; i < 3; ++i) {
    const std::string id = "t" + std::to_string(i);
    suggestion next = heard->suggest(id);
    (void)silent->suggest(id);
    heard->on_result(report{id, 1, zdt1(next.configuration)});
    heard->on_end(id, ends[i]);
  }
  BOOST_TEST((heard->suggest("t3").configuration == silent->suggest("t3").configuration));
  // Three completed trials end the startup: the model draws (from a stream
  // of its own, so the 4th suggestion differs from the random one).
  auto done = make_tpe(unit_square(), o);
  auto quiet = make_tpe(unit_square(), o);
  for (int i = 0; i < 3; ++i) {
    const std::string id = "t" + std::to_string(i);
    suggestion next = done->suggest(id);
    (void)quiet->suggest(id);
    done->on_result(report{id, 1, zdt1(next.configuration)});
    done->on_end(id, trial_end::completed);
  }
  BOOST_TEST((done->suggest("t3").configuration != quiet->suggest("t3").configuration));
}

BOOST_AUTO_TEST_CASE(a_constraint_steers_tpe_to_feasible_trials) {
  // Minimize (x - 0.2)^2 + (y - 0.2)^2 subject to x >= 0.6 (0.6 - x <= 0):
  // the unconstrained optimum is infeasible.
  auto f = [](const config& c) {
    const double x = number(c.at("x")), y = number(c.at("y"));
    return std::map<std::string, double>{{"loss", (x - 0.2) * (x - 0.2) + (y - 0.2) * (y - 0.2)},
                                         {"gap", 0.6 - x}};
  };
  int more = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    tpe_options o;
    o.metric = "loss";
    o.direction = mode::min;
    o.num_samples = 50;
    o.seed = seed;
    auto feasible_after_startup = [&](const tpe_options& options) {
      auto trials = optimize(*make_tpe(unit_square(), options), f);
      return std::count_if(trials.begin() + 10, trials.end(),
                           [](const auto& m) { return m.at("gap") <= 0; });
    };
    const auto free = feasible_after_startup(o);
    o.constraints = {{"gap", 0.0}};
    more += feasible_after_startup(o) > free;
  }
  BOOST_TEST(more >= 9);
}

BOOST_AUTO_TEST_SUITE_END()
