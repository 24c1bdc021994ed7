// The TPE searcher (Optuna 3.1's TPESampler): suggestions inside their
// domains for every type, the random startup, determinism, the ranking of
// failed and NaN trials, and that it beats random search on a quadratic.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "dtrain/tune/parzen_estimator.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/tpe.hpp"

namespace {

using namespace dtrain::tune;

using objective = std::function<double(const config&)>;

double number(const value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  return std::get<double>(v);
}

// Runs trials one at a time: suggest, report the objective as
// validation_loss at epoch 1, end. Returns the configurations and values.
struct run {
  std::vector<config> configs;
  std::vector<double> values;
  double best() const { return *std::min_element(values.begin(), values.end()); }
};

run optimize(searcher& s, const objective& f, int limit = 1000) {
  run out;
  for (int i = 0; i < limit; ++i) {
    const std::string id = "t" + std::to_string(i);
    suggestion next = s.suggest(id);
    if (next.what == suggestion::kind::finished)
      break;
    BOOST_TEST_REQUIRE((next.what == suggestion::kind::trial));
    const double y = f(next.configuration);
    s.on_result(report{id, 1, {{"validation_loss", y}}});
    s.on_end(id, trial_end::completed);
    out.configs.push_back(next.configuration);
    out.values.push_back(y);
  }
  return out;
}

tpe_options minimize(int64_t num_samples, int64_t startup, uint64_t seed) {
  tpe_options o;
  o.metric = "validation_loss";
  o.direction = mode::min;
  o.num_samples = num_samples;
  o.startup_trials = startup;
  o.seed = seed;
  return o;
}

space every_type() {
  space s;
  s.add("int", randint(-3, 7))
      .add("qint", qrandint(0, 100, 25))
      .add("uniform", uniform(-1, 1))
      .add("quniform", quniform(0.05, 0.95, 0.1))
      .add("log", loguniform(1e-5, 1e-1))
      .add("qlog", qloguniform(1, 1000, 10))
      .add("choice", choice({std::string("adam"), std::string("sgd"), int64_t{3}}))
      .add("grid", grid_search({int64_t{16}, int64_t{32}}))
      .add("grid_range", grid(loguniform(1e-3, 1e-1), 3))
      .add("constant", constant(std::string("fixed")));
  return s;
}

// Some function of every dimension, so that the estimator has a signal.
double every_type_objective(const config& c) {
  return std::fabs(number(c.at("int")) - 2) + number(c.at("qint")) / 100 +
         std::pow(number(c.at("uniform")) - 0.3, 2) +
         std::fabs(std::log10(number(c.at("log"))) + 3) +
         (to_string(c.at("choice")) == "sgd" ? 0 : 1) + number(c.at("quniform"));
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

} // namespace

BOOST_AUTO_TEST_SUITE(tpe_searcher)

BOOST_AUTO_TEST_CASE(suggestions_stay_in_their_domains_for_every_type) {
  auto s = make_tpe(every_type(), minimize(80, 10, 5));
  const run r = optimize(*s, every_type_objective);
  BOOST_TEST_REQUIRE(r.configs.size() == 80u);
  for (const auto& c : r.configs) {
    BOOST_TEST_REQUIRE(c.size() == 10u);
    const auto i = std::get<int64_t>(c.at("int"));
    BOOST_TEST((i >= -3 && i <= 7));
    const auto q = std::get<int64_t>(c.at("qint"));
    BOOST_TEST((q >= 0 && q <= 100 && q % 25 == 0));
    const double u = std::get<double>(c.at("uniform"));
    BOOST_TEST((u >= -1 && u <= 1));
    const double qu = std::get<double>(c.at("quniform"));
    BOOST_TEST((qu >= 0.1 - 1e-12 && qu <= 0.9 + 1e-12));
    BOOST_TEST(std::fabs(qu / 0.1 - std::round(qu / 0.1)) < 1e-9);
    const double l = std::get<double>(c.at("log"));
    BOOST_TEST((l >= 1e-5 && l <= 1e-1));
    const double ql = std::get<double>(c.at("qlog"));
    BOOST_TEST((ql >= 10 && ql <= 1000));
    BOOST_TEST(std::fabs(ql / 10 - std::round(ql / 10)) < 1e-9);
    const std::string ch = to_string(c.at("choice"));
    BOOST_TEST((ch == "adam" || ch == "sgd" || ch == "3"));
    const auto g = std::get<int64_t>(c.at("grid"));
    BOOST_TEST((g == 16 || g == 32));
    const double gr = std::get<double>(c.at("grid_range"));
    BOOST_TEST((gr == 1e-3 || gr == 1e-2 || gr == 1e-1));
    BOOST_TEST(to_string(c.at("constant")) == "fixed");
  }
  // The model learned something: the good choice dominates the last trials.
  int sgd = 0;
  for (size_t i = 40; i < r.configs.size(); ++i)
    sgd += to_string(r.configs[i].at("choice")) == "sgd";
  BOOST_TEST(sgd > 20);
}

BOOST_AUTO_TEST_CASE(the_same_seed_suggests_the_same_sequence_and_another_seed_differs) {
  const run a = optimize(*make_tpe(every_type(), minimize(30, 5, 42)), every_type_objective);
  const run b = optimize(*make_tpe(every_type(), minimize(30, 5, 42)), every_type_objective);
  const run c = optimize(*make_tpe(every_type(), minimize(30, 5, 43)), every_type_objective);
  BOOST_TEST((a.configs == b.configs));
  BOOST_TEST((a.configs != c.configs));
}

BOOST_AUTO_TEST_CASE(the_first_startup_trials_are_the_random_searchers_draws) {
  space s;
  s.add("x", uniform(-5, 10)).add("lr", loguniform(1e-4, 1)).add("n", randint(1, 8));
  auto tpe = make_tpe(s, minimize(20, 7, 9));
  auto random = make_variant_searcher(s, 20, 9);
  const run t = optimize(*tpe, [](const config& c) { return number(c.at("x")); });
  const run r = optimize(*random, [](const config& c) { return number(c.at("x")); });
  for (size_t i = 0; i < 7; ++i)
    BOOST_TEST((t.configs[i] == r.configs[i]));
  BOOST_TEST((t.configs[7] != r.configs[7]));  // the model takes over
}

BOOST_AUTO_TEST_CASE(running_trials_are_not_observations) {
  // Nothing ended: every suggestion stays a random startup draw.
  space s;
  s.add("x", uniform(0, 1));
  auto tpe = make_tpe(s, minimize(6, 2, 1));
  auto random = make_variant_searcher(s, 6, 1);
  for (int i = 0; i < 6; ++i) {
    const std::string id = "t" + std::to_string(i);
    const suggestion a = tpe->suggest(id);
    tpe->on_result(report{id, 1, {{"validation_loss", 0.5}}});
    BOOST_TEST((a.configuration == random->suggest(id).configuration));
  }
}

namespace {

// How the ten startup trials of `sequence` end: the odd ones complete with
// a NaN, the even ones other than 4 fail after a report of -1e9, trial 4
// completes with 1e9. `worst` replaces the NaN and failed ends with
// completed trials at the largest finite value; `by_value` completes the
// failed ones with their -1e9.
enum class ending { as_is, worst, by_value };

std::vector<config> sequence(ending e) {
  space s;
  s.add("x", uniform(0, 1)).add("k", choice({int64_t{1}, int64_t{2}, int64_t{3}}));
  auto tpe = make_tpe(s, minimize(16, 10, 7));
  std::vector<config> out;
  for (int i = 0; i < 16; ++i) {
    const std::string id = "t" + std::to_string(i);
    out.push_back(tpe->suggest(id).configuration);
    double y = number(out.back().at("x"));
    trial_end how = trial_end::completed;
    if (i < 10 && i != 4) {
      const bool fails = i % 2 == 0;
      y = fails ? -1e9 : std::nan("");
      how = fails ? trial_end::failed : trial_end::completed;
      if (e == ending::worst) {
        y = std::numeric_limits<double>::max();
        how = trial_end::completed;
      } else if (e == ending::by_value && fails) {
        how = trial_end::completed;
      }
    } else if (i == 4) {
      y = 1e9;
    }
    tpe->on_result(report{id, 1, {{"validation_loss", y}}});
    tpe->on_end(id, how);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(failed_and_nan_trials_rank_below_every_finite_value) {
  const auto as_is = sequence(ending::as_is);
  BOOST_TEST((as_is == sequence(ending::worst)));
  BOOST_TEST((as_is != sequence(ending::by_value)));  // the ranking decides the suggestions
}

BOOST_AUTO_TEST_CASE(tpe_beats_random_search_on_a_quadratic_after_40_trials) {
  space s;
  s.add("x", uniform(-10, 10));
  const objective f = [](const config& c) { return std::pow(number(c.at("x")) - 2.5, 2); };
  std::vector<double> tpe_best, random_best;
  for (uint64_t seed = 0; seed < 11; ++seed) {
    tpe_best.push_back(optimize(*make_tpe(s, minimize(40, 10, seed)), f).best());
    random_best.push_back(optimize(*make_variant_searcher(s, 40, seed), f).best());
  }
  BOOST_TEST_MESSAGE("median best: tpe " << median(tpe_best) << ", random "
                                         << median(random_best));
  BOOST_TEST(median(tpe_best) < median(random_best));
  BOOST_TEST(median(tpe_best) < 0.01);
}

BOOST_AUTO_TEST_CASE(maximizing_prefers_large_values) {
  space s;
  s.add("x", uniform(0, 1));
  tpe_options o = minimize(40, 10, 3);
  o.metric = "validation_accuracy";
  o.direction = mode::max;
  auto tpe = make_tpe(s, o);
  std::vector<double> model;  // the model's suggestions, after the startup
  for (int i = 0; i < 40; ++i) {
    const std::string id = "t" + std::to_string(i);
    const double x = number(tpe->suggest(id).configuration.at("x"));
    tpe->on_result(report{id, 1, {{"validation_accuracy", x}}});
    tpe->on_end(id, trial_end::completed);
    if (i >= 10)
      model.push_back(x);
  }
  BOOST_TEST(median(model) > 0.75);  // a uniform draw's is 0.5
  BOOST_TEST(*std::max_element(model.begin(), model.end()) > 0.98);
}

BOOST_AUTO_TEST_CASE(the_parzen_estimator_matches_optuna_3_1s_log_densities) {
  // The references: optuna.samplers._tpe.parzen_estimator._ParzenEstimator
  // of Debian's python3-optuna 3.1.0 with TPESampler's defaults, log_pdf of
  // one point over these observations.
  using detail::make_dimension;
  auto log_pdf = [](const domain& d, const std::vector<value>& observed, const value& at) {
    const detail::dimension dim = make_dimension("x", d);
    std::vector<double> xs;
    for (const auto& v : observed)
      xs.push_back(dim.to_internal(v));
    return detail::parzen_estimator(dim, xs).log_pdf(dim.to_internal(at));
  };
  const auto tight = boost::test_tools::tolerance(1e-12);
  BOOST_TEST(log_pdf(uniform(-5, 10), {1.0, 2.5, 3.0}, 1.0) == -0.6321521798256754, tight);
  std::vector<value> thirty;  // above 25 observations the older ones weigh less
  for (int i = 0; i < 30; ++i)
    thirty.push_back((i * 7 % 30) / 2.0 - 5);
  BOOST_TEST(log_pdf(uniform(-5, 10), thirty, 4.2) == -2.6438697322725506, tight);
  BOOST_TEST(log_pdf(randint(-5, 10),
                     {int64_t{-4}, int64_t{-1}, int64_t{0}, int64_t{6}, int64_t{7}, int64_t{9}},
                     int64_t{7}) == -2.537180705725697,
             tight);
  BOOST_TEST(log_pdf(quniform(0.1, 0.9, 0.1), {0.2, 0.5, 0.5}, 0.4) == -1.888473446291327, tight);
  BOOST_TEST(log_pdf(loguniform(1e-4, 1), {0.001, 0.01, 0.02}, 0.005) == -0.6364544677518659,
             tight);
  const domain abc = choice({std::string("a"), std::string("b"), std::string("c")});
  BOOST_TEST(log_pdf(abc, {std::string("a"), std::string("c"), std::string("c"), std::string("b")},
                     std::string("c")) == -0.8754687373539001,
             tight);
  BOOST_TEST(log_pdf(uniform(-5, 10), {}, 0.0) == 0.027088911602060728, tight);  // the prior alone
}

BOOST_AUTO_TEST_CASE(the_searcher_is_finished_after_num_samples) {
  auto tpe = make_tpe(every_type(), minimize(12, 3, 0));
  BOOST_TEST(tpe->total() == 12);
  BOOST_TEST(optimize(*tpe, every_type_objective).configs.size() == 12u);
  BOOST_TEST((tpe->suggest("late").what == suggestion::kind::finished));
}

BOOST_AUTO_TEST_SUITE_END()
