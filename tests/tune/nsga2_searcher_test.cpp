// The NSGA-II searcher (Optuna 3.1's NSGAIISampler): a random first
// generation, children drawn only from the previous generation's elite
// (constraints and running, failed trials as Optuna counts them),
// determinism, resume by replay, and that it beats random search on ZDT1.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "dtrain/tune/nsga2.hpp"
#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/search.hpp"

namespace {

using namespace dtrain::tune;

double number(const value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  return std::get<double>(v);
}

space unit_box(int n) {
  space s;
  for (int i = 0; i < n; ++i)
    s.add("x" + std::to_string(i), uniform(0, 1));
  return s;
}

nsga2_options two_objectives(int64_t num_samples, int64_t population, uint64_t seed) {
  nsga2_options o;
  o.objectives = {{"f1", mode::min}, {"f2", mode::min}};
  o.num_samples = num_samples;
  o.population_size = population;
  o.seed = seed;
  return o;
}

// ZDT1 over the configuration's x0..x(n-1).
std::pair<double, double> zdt1(const config& c) {
  const size_t n = c.size();
  const double f1 = number(c.at("x0"));
  double g = 0;
  for (size_t i = 1; i < n; ++i)
    g += number(c.at("x" + std::to_string(i)));
  g = 1 + 9 * g / static_cast<double>(n - 1);
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

void finish(searcher& s, const std::string& id, double f1, double f2) {
  s.on_result(report{id, 1, {{"f1", f1}, {"f2", f2}}});
  s.on_end(id, trial_end::completed);
}

// Sequential ZDT1 trials; the hypervolume of the trials' values against
// (1.1, 11) (no ZDT1 value exceeds it for 5 variables: g <= 10).
double zdt1_hypervolume(searcher& s, int trials) {
  std::vector<point> values;
  for (int i = 0; i < trials; ++i) {
    const std::string id = "t" + std::to_string(i);
    auto next = s.suggest(id);
    BOOST_TEST_REQUIRE((next.what == suggestion::kind::trial));
    auto [f1, f2] = zdt1(next.configuration);
    finish(s, id, f1, f2);
    values.push_back({f1, f2});
  }
  return *hypervolume(values, {1.1, 11});
}

// The values of `c` as one set per dimension.
void collect(const config& c, std::set<double>& into) {
  for (const auto& [name, v] : c)
    into.insert(number(v));
}

bool drawn_from(const config& c, const std::set<double>& values) {
  for (const auto& [name, v] : c)
    if (values.count(number(v)) == 0)
      return false;
  return true;
}

bool fresh(const config& c, const std::set<double>& values) {
  for (const auto& [name, v] : c)
    if (values.count(number(v)) != 0)
      return false;
  return true;
}

} // namespace

BOOST_AUTO_TEST_SUITE(nsga2_searcher)

BOOST_AUTO_TEST_CASE(options_are_checked_naming_the_field) {
  nsga2_options o = two_objectives(10, 4, 0);
  BOOST_TEST(validate(o).is_ok());
  o.population_size = 1;
  BOOST_TEST(validate(o).message().find("nsga2.population_size") != std::string::npos);
  o = two_objectives(10, 4, 0);
  o.crossover_prob = 1.5;
  BOOST_TEST(validate(o).message().find("nsga2.crossover_prob") != std::string::npos);
  o = two_objectives(10, 4, 0);
  o.objectives.clear();
  BOOST_TEST(validate(o).message().find("metrics") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_same_seed_suggests_the_same_sequence_and_another_seed_differs) {
  auto a = make_nsga2(unit_box(5), two_objectives(120, 10, 7));
  auto b = make_nsga2(unit_box(5), two_objectives(120, 10, 7));
  auto c = make_nsga2(unit_box(5), two_objectives(120, 10, 8));
  const double ha = zdt1_hypervolume(*a, 120), hb = zdt1_hypervolume(*b, 120);
  BOOST_TEST(ha == hb);
  BOOST_TEST(ha != zdt1_hypervolume(*c, 120));
  BOOST_TEST((a->suggest("last").what == suggestion::kind::finished));
}

BOOST_AUTO_TEST_CASE(children_come_only_from_the_elite_of_the_previous_generation) {
  // Eight trials suggested before any ends: all generation 0. Trials 0-3
  // dominate 4-7, so with population 4 the elite is 0-3; without mutation
  // and with crossover always, every child value is one of theirs.
  nsga2_options o = two_objectives(40, 4, 3);
  o.mutation_prob = 0;
  o.crossover_prob = 1;
  auto s = make_nsga2(unit_box(3), o);
  std::vector<config> first;
  for (int i = 0; i < 8; ++i)
    first.push_back(s->suggest("t" + std::to_string(i)).configuration);
  std::set<double> elite, all;
  for (int i = 0; i < 8; ++i) {
    collect(first[i], all);
    if (i < 4)
      collect(first[i], elite);
    finish(*s, "t" + std::to_string(i), i < 4 ? i : 10 + i, i < 4 ? 3 - i : 10 + i);
  }
  for (int i = 8; i < 30; ++i) {
    auto c = s->suggest("t" + std::to_string(i)).configuration;
    BOOST_TEST(drawn_from(c, elite), "trial " << i << ": " << describe(c));
  }
  BOOST_TEST(elite.size() == 12u);  // the draws are distinct: the check means something
  BOOST_TEST(all.size() == 24u);
}

BOOST_AUTO_TEST_CASE(infeasible_trials_lose_to_feasible_ones) {
  // As above, but trials 0-3 (the best objectives) violate the constraint
  // "size <= 1": the elite is the feasible 4-7.
  nsga2_options o = two_objectives(40, 4, 5);
  o.mutation_prob = 0;
  o.crossover_prob = 1;
  o.constraints = {{"size", 1.0}};
  auto s = make_nsga2(unit_box(3), o);
  std::vector<config> first;
  for (int i = 0; i < 8; ++i)
    first.push_back(s->suggest("t" + std::to_string(i)).configuration);
  std::set<double> feasible;
  for (int i = 0; i < 8; ++i) {
    if (i >= 4)
      collect(first[i], feasible);
    const std::string id = "t" + std::to_string(i);
    s->on_result(report{id, 1, {{"f1", double(i)}, {"f2", double(-i)}, {"size", i < 4 ? 2.0 : 0.5}}});
    s->on_end(id, trial_end::completed);
  }
  for (int i = 8; i < 30; ++i) {
    auto c = s->suggest("t" + std::to_string(i)).configuration;
    BOOST_TEST(drawn_from(c, feasible), "trial " << i << ": " << describe(c));
  }
}

BOOST_AUTO_TEST_CASE(running_and_failed_trials_do_not_fill_a_generation) {
  nsga2_options o = two_objectives(40, 4, 11);
  o.mutation_prob = 0;
  o.crossover_prob = 1;
  auto s = make_nsga2(unit_box(3), o);
  std::set<double> seen;
  for (int i = 0; i < 5; ++i)
    collect(s->suggest("t" + std::to_string(i)).configuration, seen);
  finish(*s, "t0", 0, 1);
  finish(*s, "t1", 1, 0);
  s->on_result(report{"t2", 1, {{"f1", 0.1}, {"f2", 0.1}}});  // reported, then failed
  s->on_end("t2", trial_end::failed);
  finish(*s, "t3", 0.5, 0.5);
  // Three completed, one failed, one running: still the first generation
  // (random: no value seen before).
  auto random = s->suggest("t5").configuration;
  BOOST_TEST(fresh(random, seen), describe(random));
  collect(random, seen);
  // A completion without a value of f2 does not count either.
  s->on_result(report{"t4", 1, {{"f1", 0.2}}});
  s->on_end("t4", trial_end::completed);
  auto still = s->suggest("t6").configuration;
  BOOST_TEST(fresh(still, seen), describe(still));
  collect(still, seen);
  // The fourth complete trial fills it: children from now on.
  finish(*s, "t5", 0.3, 0.9);
  auto child = s->suggest("t7").configuration;
  BOOST_TEST(drawn_from(child, seen), describe(child));
}

BOOST_AUTO_TEST_CASE(a_new_searcher_fed_the_same_calls_suggests_the_same_trials) {
  // Four trials run at once; each end is heard before the next suggestion.
  // A second searcher replays the first 60 calls' worth of history (as a
  // resumed sweep does) and must then suggest what the first one did.
  struct call {
    bool suggest;
    std::string id;
    double f1 = 0, f2 = 0;
  };
  std::vector<call> calls;
  std::vector<config> suggested;
  auto original = make_nsga2(unit_box(5), two_objectives(100, 8, 21));
  std::vector<std::pair<std::string, config>> running;
  int next = 0;
  while (next < 100 || !running.empty()) {
    while (next < 100 && running.size() < 4) {
      const std::string id = "t" + std::to_string(next++);
      auto c = original->suggest(id).configuration;
      calls.push_back({true, id});
      suggested.push_back(c);
      running.emplace_back(id, c);
    }
    // The second oldest ends first, to mix the order.
    const size_t k = running.size() > 1 ? 1 : 0;
    auto [f1, f2] = zdt1(running[k].second);
    finish(*original, running[k].first, f1, f2);
    calls.push_back({false, running[k].first, f1, f2});
    running.erase(running.begin() + static_cast<long>(k));
  }
  auto resumed = make_nsga2(unit_box(5), two_objectives(100, 8, 21));
  size_t n = 0;
  for (const auto& c : calls) {
    if (c.suggest) {
      auto got = resumed->suggest(c.id).configuration;
      BOOST_TEST((got == suggested[n]), "trial " << c.id);
      ++n;
    } else {
      finish(*resumed, c.id, c.f1, c.f2);
    }
  }
  BOOST_TEST(n == 100u);
}

BOOST_AUTO_TEST_CASE(nsga2_beats_random_search_on_zdt1) {
  // 5 variables, 300 trials, population 20, over 5 seeds: the summed
  // hypervolume of NSGA-II's trials is above random search's.
  double nsga2 = 0, random = 0;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    auto s = make_nsga2(unit_box(5), two_objectives(300, 20, seed));
    nsga2 += zdt1_hypervolume(*s, 300);
    auto r = make_variant_searcher(unit_box(5), 300, seed);
    random += zdt1_hypervolume(*r, 300);
  }
  BOOST_TEST(nsga2 > random * 1.02, "NSGA-II " << nsga2 << " vs random " << random);
}

BOOST_AUTO_TEST_CASE(constants_are_kept_and_integers_and_choices_inherited) {
  space s;
  s.add("layers", randint(1, 4)).add("act", choice({std::string("relu"), std::string("tanh")}));
  s.add("lr", loguniform(1e-4, 1e-1)).add("batch", constant(int64_t{64}));
  auto n = make_nsga2(s, two_objectives(60, 6, 2));
  for (int i = 0; i < 60; ++i) {
    const std::string id = "t" + std::to_string(i);
    auto c = n->suggest(id).configuration;
    BOOST_TEST_REQUIRE(c.size() == 4u);
    BOOST_TEST((c.at("batch") == value{int64_t{64}}));
    const int64_t layers = std::get<int64_t>(c.at("layers"));
    BOOST_TEST((layers >= 1 && layers <= 4));
    const double lr = std::get<double>(c.at("lr"));
    BOOST_TEST((lr >= 1e-4 && lr <= 1e-1));
    const bool relu = std::get<std::string>(c.at("act")) == "relu";
    finish(*n, id, std::log(lr) + layers, relu ? 1.0 / layers : 2.0 / layers);
  }
}

BOOST_AUTO_TEST_SUITE_END()
