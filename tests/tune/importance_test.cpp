// Hyperparameter importance (fANOVA as Optuna 3.1's FanovaImportanceEvaluator,
// and the fast histogram forest): the decomposition of a hand-built tree,
// a parameter that alone matters ranked first, determinism, categoricals,
// errors, and agreement with Optuna's numbers on committed trial sets.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/tune/functional_anova.hpp"
#include "dtrain/tune/importance.hpp"

#ifndef DTRAIN_SOURCE_DIR
#error "tests/CMakeLists.txt defines DTRAIN_SOURCE_DIR for dtrain-core-test"
#endif

namespace {

using namespace dtrain::tune;

importance_options with(importance_method m, uint64_t seed = 0) {
  importance_options o;
  o.method = m;
  o.seed = seed;
  return o;
}

std::map<std::string, double> by_name(const std::vector<parameter_importance>& v) {
  std::map<std::string, double> out;
  for (const auto& p : v)
    out[p.name] = p.importance;
  return out;
}

// x1 decides the value; x2 adds a little; dummy nothing.
std::vector<importance_trial> x1_trials(int n, uint64_t seed) {
  dtrain::rng r(seed);
  std::vector<importance_trial> out;
  for (int i = 0; i < n; ++i) {
    const double x1 = r.uniform_double(), x2 = r.uniform_double(), d = r.uniform_double();
    out.push_back({"t" + std::to_string(i), {{"x1", x1}, {"x2", x2}, {"dummy", d}},
                   10 * (x1 - 0.3) * (x1 - 0.3) + 0.3 * x2});
  }
  return out;
}

space x1_space() {
  space s;
  s.add("x1", uniform(0, 1)).add("x2", uniform(0, 1)).add("dummy", uniform(0, 1));
  return s;
}

// ---- the committed reference: Optuna's fANOVA on fixed trial sets --------

struct reference_case {
  std::string name;
  space s;
  std::vector<importance_trial> trials;
  std::map<std::string, double> optuna;
};

domain domain_of(const std::string& kind, const std::vector<std::string>& args) {
  if (kind == "uniform")
    return uniform(std::stod(args[0]), std::stod(args[1]));
  if (kind == "log")
    return loguniform(std::stod(args[0]), std::stod(args[1]));
  if (kind == "int")
    return randint(std::stoll(args[0]), std::stoll(args[1]));
  std::vector<value> choices(args.begin(), args.end());
  return choice(choices);
}

std::vector<reference_case> read_reference() {
  std::ifstream in(std::string(DTRAIN_SOURCE_DIR) + "/tests/tune/importance_reference.txt");
  BOOST_REQUIRE_MESSAGE(in, "tests/tune/importance_reference.txt cannot be read");
  std::vector<reference_case> cases;
  std::vector<std::pair<std::string, std::string>> params;  // name, kind
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word;
    words >> word;
    if (word == "case") {
      cases.emplace_back();
      words >> cases.back().name;
      params.clear();
    } else if (word == "param") {
      std::string name, kind, arg;
      std::vector<std::string> args;
      words >> name >> kind;
      while (words >> arg)
        args.push_back(arg);
      cases.back().s.add(name, domain_of(kind, args));
      params.emplace_back(name, kind);
    } else if (word == "trial") {
      importance_trial t;
      t.id = std::to_string(cases.back().trials.size());
      std::string v;
      words >> v;
      t.value = std::stod(v);
      for (auto& [name, kind] : params) {
        words >> v;
        if (kind == "int")
          t.configuration[name] = static_cast<int64_t>(std::stoll(v));
        else if (kind == "choice")
          t.configuration[name] = v;
        else
          t.configuration[name] = std::stod(v);
      }
      cases.back().trials.push_back(std::move(t));
    } else if (word == "optuna") {
      std::string name, param, v;
      words >> name >> param >> v;
      cases.back().optuna[param] = std::stod(v);
    }
  }
  return cases;
}

// Ranks (1 = largest), ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]])
      ++j;
    for (size_t k = i; k <= j; ++k)
      r[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return sab / std::sqrt(saa * sbb);
}

} // namespace

BOOST_AUTO_TEST_SUITE(importance)

BOOST_AUTO_TEST_CASE(a_tree_split_on_one_column_gives_it_all_the_variance) {
  // x0 <= 0.25 -> 0, else 4 over [0, 1]^2: variance 0.75 * 0.25 * 16 = 3.
  regression_tree t(3);
  t[0] = {0, 0.25, 1, 2, 3};
  t[1].value = 0;
  t[2].value = 4;
  auto v = decompose_tree(t, {{0, 1}, {0, 1}}, {{0}, {1}});
  BOOST_REQUIRE(v);
  BOOST_TEST(v->total == 3.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(v->marginal[0] == 3.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(v->marginal[1] == 0.0);
}

BOOST_AUTO_TEST_CASE(an_additive_tree_splits_its_variance_by_main_effects) {
  // f = a(x0) + b(x1) with a in {0, 2} (split at 0.5) and b in {0, 1}
  // (split at 0.5 in both subtrees): var a = 1, var b = 0.25, no
  // interaction; a second column's bounds [10, 30] must not matter.
  regression_tree t(7);
  t[0] = {0, 0.5, 1, 2, 0};
  t[1] = {1, 20, 3, 4, 0};
  t[2] = {1, 20, 5, 6, 0};
  t[3].value = 0;
  t[4].value = 1;
  t[5].value = 2;
  t[6].value = 3;
  auto v = decompose_tree(t, {{0, 1}, {10, 30}}, {{0}, {1}, {0, 1}});
  BOOST_REQUIRE(v);
  BOOST_TEST(v->total == 1.25, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(v->marginal[0] == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(v->marginal[1] == 0.25, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(v->marginal[2] == 1.25, boost::test_tools::tolerance(1e-12));  // both jointly
}

BOOST_AUTO_TEST_CASE(only_x1_matters_so_x1_ranks_first_and_a_dummy_gets_under_5_percent) {
  for (auto m : {importance_method::fanova, importance_method::fast}) {
    auto r = evaluate_importance(x1_space(), x1_trials(200, 7), with(m));
    BOOST_REQUIRE_MESSAGE(r, r.error().message());
    BOOST_TEST_MESSAGE(to_string(m) << ": " << (*r)[0].name << " " << (*r)[0].importance);
    BOOST_TEST((*r)[0].name == "x1");
    BOOST_TEST((*r)[0].importance > 0.8);
    auto named = by_name(*r);
    BOOST_TEST(named["dummy"] < 0.05);
    BOOST_TEST(named["x2"] > named["dummy"]);
    double sum = 0;
    for (auto& p : *r)
      sum += p.importance;
    BOOST_TEST(sum == 1.0, boost::test_tools::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_numbers_to_the_bit_on_any_thread_count) {
  for (auto m : {importance_method::fanova, importance_method::fast}) {
    importance_options one = with(m, 11), three = with(m, 11);
    one.threads = 1;
    three.threads = 3;
    auto a = evaluate_importance(x1_space(), x1_trials(120, 3), one);
    auto b = evaluate_importance(x1_space(), x1_trials(120, 3), three);
    auto c = evaluate_importance(x1_space(), x1_trials(120, 3), with(m, 12));
    BOOST_REQUIRE(a && b && c);
    for (size_t i = 0; i < a->size(); ++i) {
      BOOST_TEST((*a)[i].name == (*b)[i].name);
      BOOST_TEST((*a)[i].importance == (*b)[i].importance);  // exact
    }
    BOOST_TEST(by_name(*a)["x2"] != by_name(*c)["x2"]);  // the seed reaches the forest
  }
}

BOOST_AUTO_TEST_CASE(a_choice_is_assessed_as_one_parameter_over_its_one_hot_columns) {
  space s;
  s.add("opt", choice({std::string("adam"), std::string("sgd"), std::string("rmsprop")}))
      .add("x", uniform(0, 1))
      .add("fixed", constant(int64_t{3}));
  dtrain::rng r(5);
  std::vector<importance_trial> trials;
  const char* names[] = {"adam", "sgd", "rmsprop"};
  for (int i = 0; i < 150; ++i) {
    const int k = static_cast<int>(r.below(3));
    const double x = r.uniform_double();
    trials.push_back({std::to_string(i), {{"opt", std::string(names[k])}, {"x", x}},
                      2.0 * k + 0.2 * x});
  }
  auto v = evaluate_importance(s, trials, with(importance_method::fanova));
  BOOST_REQUIRE_MESSAGE(v, v.error().message());
  BOOST_REQUIRE(v->size() == 2u);  // constants are not assessed
  BOOST_TEST((*v)[0].name == "opt");
  BOOST_TEST((*v)[0].importance > 0.9);
}

BOOST_AUTO_TEST_CASE(log_scale_weighs_a_log_range_by_its_exponent_optunas_default_by_its_value) {
  // The value follows lr's exponent, which the raw range [1e-4, 1e-1]
  // squeezes into its first hundredth: measured by value (Optuna 3.1's
  // transform_log=False) lr explains less than measured by exponent.
  space s;
  s.add("lr", loguniform(1e-4, 1e-1)).add("x", uniform(0, 1));
  dtrain::rng r(9);
  std::vector<importance_trial> trials;
  for (int i = 0; i < 200; ++i) {
    const double lr = std::pow(10.0, -4 + 3 * r.uniform_double()), x = r.uniform_double();
    trials.push_back({std::to_string(i), {{"lr", lr}, {"x", x}}, std::log10(lr) + 1.5 * x});
  }
  importance_options by_value, by_exponent;
  by_exponent.log_scale = true;
  auto a = evaluate_importance(s, trials, by_value);
  auto b = evaluate_importance(s, trials, by_exponent);
  BOOST_REQUIRE(a && b);
  BOOST_TEST_MESSAGE("lr by value " << by_name(*a)["lr"] << ", by exponent " << by_name(*b)["lr"]);
  BOOST_TEST(by_name(*b)["lr"] > by_name(*a)["lr"] + 0.1);
}

BOOST_AUTO_TEST_CASE(too_few_trials_missing_values_and_flat_values_are_named_errors) {
  auto few = x1_trials(3, 1);
  few[1].value = std::numeric_limits<double>::quiet_NaN();
  few[2].value = std::numeric_limits<double>::infinity();
  auto e = evaluate_importance(x1_space(), few, {});
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error().message().find("at least 2 completed trials with a finite value, got 1") !=
             std::string::npos);

  auto flat = x1_trials(10, 1);
  for (auto& t : flat)
    t.value = 1.5;
  e = evaluate_importance(x1_space(), flat, {});
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error().message().find("same value") != std::string::npos);

  auto missing = x1_trials(10, 1);
  missing[4].configuration.erase("x2");
  e = evaluate_importance(x1_space(), missing, {});
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error().message() == "trial t4 has no value of parameter x2");

  space s;
  s.add("opt", choice({std::string("adam"), std::string("sgd")}));
  std::vector<importance_trial> odd{{"a", {{"opt", std::string("adam")}}, 1},
                                    {"b", {{"opt", std::string("lion")}}, 2}};
  e = evaluate_importance(s, odd, {});
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error().message().find("trial b: parameter opt holds lion") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(rankings_agree_with_optuna_fanova_on_the_committed_trials) {
  const auto cases = read_reference();
  BOOST_REQUIRE(cases.size() >= 3u);
  for (const auto& c : cases) {
    for (auto m : {importance_method::fanova, importance_method::fast}) {
      auto v = evaluate_importance(c.s, c.trials, with(m));
      BOOST_REQUIRE_MESSAGE(v, v.error().message());
      std::vector<double> ours, theirs;
      double worst = 0;
      for (const auto& p : *v) {
        BOOST_REQUIRE(c.optuna.count(p.name));
        ours.push_back(p.importance);
        theirs.push_back(c.optuna.at(p.name));
        worst = std::max(worst, std::abs(p.importance - c.optuna.at(p.name)));
      }
      const double rho = spearman(ours, theirs);
      BOOST_TEST_MESSAGE(c.name << " " << to_string(m) << ": Spearman " << rho
                                << ", max |difference| " << worst);
      BOOST_TEST(rho >= 0.8, c.name << " " << to_string(m) << ": Spearman " << rho);
      BOOST_TEST(worst < 0.05, c.name << " " << to_string(m) << ": max |difference| " << worst);
    }
  }
}

BOOST_AUTO_TEST_CASE(unknown_method_names_list_the_known_ones) {
  BOOST_TEST(std::string(to_string(*parse_importance_method("fast"))) == "fast");
  auto bad = parse_importance_method("shap");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.error().message() == "unknown importance method 'shap' (known: fanova, fast)");
}

BOOST_AUTO_TEST_SUITE_END()
