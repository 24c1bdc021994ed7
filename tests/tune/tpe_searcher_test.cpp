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

using objective_function = std::function<double(const config&)>;

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

run optimize(searcher& s, const objective_function& f, int limit = 1000) {
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

BOOST_AUTO_TEST_CASE(the_startup_trials_do_not_depend_on_the_results) {
  // The first 7 are random draws (Optuna's RandomSampler stream, which the
  // searcher_traces suite checks value by value): two objectives give the
  // same 7, then the model takes over and they part.
  space s;
  s.add("x", uniform(-5, 10)).add("lr", loguniform(1e-4, 1)).add("n", randint(1, 8));
  const run up = optimize(*make_tpe(s, minimize(20, 7, 9)),
                          [](const config& c) { return number(c.at("x")); });
  const run down = optimize(*make_tpe(s, minimize(20, 7, 9)),
                            [](const config& c) { return -number(c.at("x")); });
  for (size_t i = 0; i < 7; ++i)
    BOOST_TEST((up.configs[i] == down.configs[i]));
  BOOST_TEST((up.configs[7] != down.configs[7]));
}

BOOST_AUTO_TEST_CASE(running_trials_are_not_observations) {
  // Nothing ended: every suggestion stays a random startup draw, the same
  // as a searcher whose startup covers all six gives.
  space s;
  s.add("x", uniform(0, 1));
  auto tpe = make_tpe(s, minimize(6, 2, 1));
  auto all_startup = make_tpe(s, minimize(6, 6, 1));
  for (int i = 0; i < 6; ++i) {
    const std::string id = "t" + std::to_string(i);
    const suggestion a = tpe->suggest(id);
    tpe->on_result(report{id, 1, {{"validation_loss", 0.5}}});
    BOOST_TEST((a.configuration == all_startup->suggest(id).configuration));
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
  const objective_function f = [](const config& c) {
    return std::pow(number(c.at("x")) - 2.5, 2);
  };
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

BOOST_AUTO_TEST_CASE(the_joint_estimator_matches_optuna_3_1s_multivariate_log_densities) {
  // The references: Optuna 3.1's _ParzenEstimator with multivariate=True
  // (Scott's bandwidths) and TPESampler's other defaults, log_pdf of points
  // over these observations (tools/reference/optuna_parzen_multivariate.py).
  using detail::make_dimension;
  const auto tight = boost::test_tools::tolerance(1e-12);
  const auto xyz = choice({std::string("x"), std::string("y"), std::string("z")});
  const std::vector<detail::dimension> four = {
      make_dimension("a", uniform(-5, 10)), make_dimension("b", randint(1, 8)),
      make_dimension("c", loguniform(1e-4, 1)), make_dimension("d", xyz)};
  std::vector<const detail::dimension*> dims;
  for (const auto& d : four)
    dims.push_back(&d);
  auto row = [&](double a, int64_t b, double c, const char* d) {
    return std::vector<double>{four[0].to_internal(a), four[1].to_internal(b),
                               four[2].to_internal(c), four[3].to_internal(std::string(d))};
  };
  const detail::parzen_estimator joint(
      dims, {row(1.0, 2, 0.001, "x"), row(2.5, 5, 0.01, "z"), row(-3.0, 8, 0.5, "z"),
             row(7.5, 3, 0.02, "y")},
      detail::bandwidth::scott);
  BOOST_TEST(joint.log_pdf(row(1.0, 2, 0.002, "z")) == -4.563789869388538, tight);
  BOOST_TEST(joint.log_pdf(row(6.0, 7, 0.3, "x")) == -4.80669263237616, tight);

  // Thirty observations over two ranges (the older ones weigh less), and
  // the prior alone.
  const detail::dimension x = make_dimension("x", uniform(0, 1));
  const detail::dimension y = make_dimension("y", uniform(-2, 2));
  std::vector<std::vector<double>> thirty;
  for (int i = 0; i < 30; ++i)
    thirty.push_back({(i * 7 % 30) / 30.0, ((i * 11) % 30) / 7.5 - 2});
  BOOST_TEST(detail::parzen_estimator({&x, &y}, thirty, detail::bandwidth::scott)
                     .log_pdf({0.25, 0.5}) == -2.9827048134828087,
             tight);
  BOOST_TEST(detail::parzen_estimator({&x, &y}, {}, detail::bandwidth::scott).log_pdf({0.25, 0.5}) ==
                 0.042893100981899135,
             tight);
}

// Four trials at a time, as a tuner with four slots runs them: the first
// four are suggested together, then each time the oldest running trial
// ends, one more is suggested. Returns the configurations in suggestion
// order.
run optimize_four_at_a_time(searcher& s, const objective_function& f) {
  run out;
  std::vector<std::pair<std::string, double>> running;
  for (int i = 0;; ++i) {
    const std::string id = "t" + std::to_string(i);
    suggestion next = s.suggest(id);
    if (next.what == suggestion::kind::trial) {
      out.configs.push_back(next.configuration);
      out.values.push_back(f(next.configuration));
      running.emplace_back(id, out.values.back());
    }
    if (running.size() < 4 && next.what == suggestion::kind::trial)
      continue;
    if (running.empty())
      break;
    const auto [done, y] = running.front();
    running.erase(running.begin());
    s.on_result(report{done, 1, {{"validation_loss", y}}});
    s.on_end(done, trial_end::completed);
  }
  return out;
}

double quadratic(const config& c) {
  const double x = number(c.at("x")), y = number(c.at("y"));
  return (x - 0.3) * (x - 0.3) + (y - 0.7) * (y - 0.7);
}

space unit_square() {
  space s;
  s.add("x", uniform(0, 1)).add("y", uniform(0, 1));
  return s;
}

BOOST_AUTO_TEST_CASE(the_constant_liar_spreads_concurrent_suggestions) {
  // The same trials (same seed, same startup) up to the first model draw;
  // from then on, four trials at a time. Without the liar, the trials
  // suggested while others run all chase the same best region; with it,
  // the running ones count as bad, so the suggestions of one wave lie
  // further apart. Measured as the mean distance between the trials
  // suggested while each other ran (a wave: trials i and i + 1..3).
  auto spread = [](bool liar, bool multivariate, uint64_t seed) {
    tpe_options o = minimize(60, 10, seed);
    o.constant_liar = liar;
    o.multivariate = multivariate;
    auto tpe = make_tpe(unit_square(), o);
    const run r = optimize_four_at_a_time(*tpe, quadratic);
    double sum = 0;
    int count = 0;
    for (size_t i = 12; i < r.configs.size(); ++i)
      for (size_t j = i + 1; j < std::min(i + 4, r.configs.size()); ++j) {
        const double dx = number(r.configs[i].at("x")) - number(r.configs[j].at("x"));
        const double dy = number(r.configs[i].at("y")) - number(r.configs[j].at("y"));
        sum += std::sqrt(dx * dx + dy * dy);
        ++count;
      }
    return sum / count;
  };
  for (bool multivariate : {false, true}) {
    int wider = 0;
    for (uint64_t seed = 0; seed < 10; ++seed)
      wider += spread(true, multivariate, seed) > spread(false, multivariate, seed);
    BOOST_TEST_INFO("multivariate " << multivariate);
    BOOST_TEST(wider >= 8);
  }
}

BOOST_AUTO_TEST_CASE(the_liar_and_the_joint_estimator_are_deterministic_for_a_seed) {
  auto trials = [](uint64_t seed, bool liar) {
    tpe_options o = minimize(40, 8, seed);
    o.multivariate = true;
    o.constant_liar = liar;
    return optimize_four_at_a_time(*make_tpe(every_type(), o), every_type_objective).configs;
  };
  BOOST_TEST((trials(4, true) == trials(4, true)));
  BOOST_TEST((trials(4, true) != trials(5, true)));
  // The liar changes what is drawn once the model takes over.
  BOOST_TEST((trials(4, true) != trials(4, false)));
  for (const auto& c : trials(4, true))
    BOOST_TEST(every_type().domains().size() == c.size());
}

BOOST_AUTO_TEST_CASE(the_joint_estimator_finds_a_correlated_valley_the_independent_one_misses) {
  // A narrow diagonal valley, x == y: independent estimators see good x
  // and good y separately and recombine them off the diagonal; the joint
  // one keeps good pairs together (Optuna's reason for multivariate TPE).
  auto valley = [](const config& c) {
    const double x = number(c.at("x")), y = number(c.at("y"));
    return 100 * (x - y) * (x - y) + 0.1 * (x + y);
  };
  space s;
  s.add("x", uniform(-1, 1)).add("y", uniform(-1, 1));
  std::vector<double> independent, joint;
  for (uint64_t seed = 0; seed < 15; ++seed) {
    tpe_options o = minimize(60, 10, seed);
    independent.push_back(optimize(*make_tpe(s, o), valley).best());
    o.multivariate = true;
    joint.push_back(optimize(*make_tpe(s, o), valley).best());
  }
  std::sort(independent.begin(), independent.end());
  std::sort(joint.begin(), joint.end());
  BOOST_TEST_INFO("median best: joint " << joint[7] << ", independent " << independent[7]);
  BOOST_TEST(joint[7] < independent[7]);
}

BOOST_AUTO_TEST_CASE(the_searcher_is_finished_after_num_samples) {
  auto tpe = make_tpe(every_type(), minimize(12, 3, 0));
  BOOST_TEST(tpe->total() == 12);
  BOOST_TEST(optimize(*tpe, every_type_objective).configs.size() == 12u);
  BOOST_TEST((tpe->suggest("late").what == suggestion::kind::finished));
}

BOOST_AUTO_TEST_SUITE_END()
