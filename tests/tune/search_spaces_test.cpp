// Search spaces: values print in the form the operator reads back, every
// domain draws inside its bounds, the same seed draws the same values, grids
// enumerate in Ray's order, and a malformed space names the hyperparameter.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "dtrain/tune/space.hpp"

namespace {

using namespace dtrain::tune;
using dtrain::error_code;
using dtrain::rng;

// `n` draws of the one hyperparameter "x" of a space holding only `d`.
std::vector<value> draws(const domain& d, int n, uint64_t seed = 1) {
  space s;
  s.add("x", d);
  BOOST_TEST_REQUIRE(s.validate().is_ok(), s.validate().to_string());
  rng r(seed);
  std::vector<value> out;
  for (int i = 0; i < n; ++i)
    out.push_back(s.sample(r).at("x"));
  return out;
}

// The error of validating a space whose only hyperparameter is `name`.
std::string error_of(const std::string& name, const domain& d) {
  space s;
  s.add(name, d);
  auto st = s.validate();
  BOOST_TEST(!st.is_ok());
  BOOST_TEST((st.code() == error_code::invalid_argument));
  return st.message();
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(search_spaces)

BOOST_AUTO_TEST_CASE(values_print_as_the_operator_reads_them) {
  BOOST_TEST(to_string(value{int64_t{64}}) == "64");
  BOOST_TEST(to_string(value{int64_t{-3}}) == "-3");
  BOOST_TEST(to_string(value{0.001}) == "0.001");
  BOOST_TEST(to_string(value{0.1}) == "0.1");
  BOOST_TEST(to_string(value{true}) == "true");
  BOOST_TEST(to_string(value{false}) == "false");
  BOOST_TEST(to_string(value{std::string("adam")}) == "adam");
  BOOST_TEST(to_strings({{"lr", 0.5}, {"opt", std::string("sgd")}}) ==
             (std::map<std::string, std::string>{{"lr", "0.5"}, {"opt", "sgd"}}));
}

BOOST_AUTO_TEST_CASE(doubles_print_in_their_shortest_form_that_reads_back_exactly) {
  const double awkward[] = {0.1 + 0.2, 1.0 / 3.0, 1e-300, 123456789.123456789,
                            std::nextafter(1.0, 2.0), 5e-324, -2.5e17};
  for (double d : awkward) {
    const std::string text = to_string(value{d});
    BOOST_TEST(std::strtod(text.c_str(), nullptr) == d, text);
  }
  BOOST_TEST(to_string(value{0.1 + 0.2}) == "0.30000000000000004");
  BOOST_TEST(to_string(value{1.0 / 3.0}) == "0.3333333333333333");
}

BOOST_AUTO_TEST_CASE(uniform_draws_stay_in_bounds_and_spread_over_them) {
  double lowest = 1e9, highest = -1e9;
  for (const value& v : draws(uniform(-2.0, 3.0), 2000)) {
    const double x = std::get<double>(v);
    BOOST_TEST_REQUIRE((x >= -2.0 && x <= 3.0), x);
    lowest = std::min(lowest, x);
    highest = std::max(highest, x);
  }
  BOOST_TEST(lowest < -1.9);
  BOOST_TEST(highest > 2.9);
}

BOOST_AUTO_TEST_CASE(quantized_draws_are_multiples_of_q_inside_the_inward_rounded_bounds) {
  std::set<double> seen;
  for (const value& v : draws(quniform(0.1, 1.0, 0.25), 2000)) {
    const double x = std::get<double>(v);
    BOOST_TEST_REQUIRE((x >= 0.25 && x <= 1.0), x);  // 0.1 rounds inward to 0.25
    BOOST_TEST_REQUIRE(std::fabs(x / 0.25 - std::round(x / 0.25)) < 1e-9, x);
    seen.insert(x);
  }
  BOOST_TEST(seen == (std::set<double>{0.25, 0.5, 0.75, 1.0}));
  for (const value& v : draws(qloguniform(1e-3, 1.0, 1e-3), 500)) {
    const double x = std::get<double>(v);
    BOOST_TEST_REQUIRE((x >= 1e-3 && x <= 1.0), x);
    BOOST_TEST_REQUIRE(std::fabs(x / 1e-3 - std::round(x / 1e-3)) < 1e-6, x);
  }
}

BOOST_AUTO_TEST_CASE(integer_draws_reach_both_inclusive_ends) {
  std::set<int64_t> seen;
  for (const value& v : draws(randint(3, 7), 1000))
    seen.insert(std::get<int64_t>(v));
  BOOST_TEST(seen == (std::set<int64_t>{3, 4, 5, 6, 7}));
  std::set<int64_t> multiples;
  for (const value& v : draws(qrandint(1, 20, 5), 1000))
    multiples.insert(std::get<int64_t>(v));
  BOOST_TEST(multiples == (std::set<int64_t>{5, 10, 15, 20}));
}

BOOST_AUTO_TEST_CASE(log_uniform_draws_have_a_median_near_the_geometric_mean) {
  std::vector<double> xs;
  for (const value& v : draws(loguniform(1e-4, 1e-1), 4001)) {
    const double x = std::get<double>(v);
    BOOST_TEST_REQUIRE((x >= 1e-4 && x <= 1e-1), x);
    xs.push_back(x);
  }
  std::nth_element(xs.begin(), xs.begin() + 2000, xs.end());
  const double median = xs[2000];
  const double geometric_mean = std::sqrt(1e-4 * 1e-1);  // ~3.2e-3; a linear median is ~5e-2
  BOOST_TEST(median > geometric_mean / 1.5, median);
  BOOST_TEST(median < geometric_mean * 1.5, median);
}

BOOST_AUTO_TEST_CASE(choice_draws_cover_every_choice_and_nothing_else) {
  const std::vector<value> options = {std::string("adam"), std::string("sgd"), int64_t{3}, true};
  std::set<std::string> seen;
  for (const value& v : draws(choice(options), 400)) {
    BOOST_TEST_REQUIRE((std::find(options.begin(), options.end(), v) != options.end()));
    seen.insert(to_string(v));
  }
  BOOST_TEST(seen.size() == 4u);
}

BOOST_AUTO_TEST_CASE(the_same_seed_draws_the_same_sequence_and_another_seed_differs) {
  space s;
  s.add("lr", loguniform(1e-5, 1.0)).add("width", randint(1, 1000))
      .add("opt", choice({std::string("a"), std::string("b"), std::string("c")}))
      .add("fixed", constant(int64_t{15}));
  BOOST_TEST_REQUIRE(s.validate().is_ok());
  auto sequence = [&](uint64_t seed) {
    rng r(seed);
    std::vector<config> out;
    for (int i = 0; i < 20; ++i)
      out.push_back(s.sample(r));
    return out;
  };
  BOOST_TEST((sequence(7) == sequence(7)));
  BOOST_TEST((sequence(7) != sequence(8)));
  // Constants are part of every draw, so each configuration is complete.
  BOOST_TEST((sequence(7).front().at("fixed") == value{int64_t{15}}));
  // A value pinned here: the sequence is splitmix's, the same on every platform.
  rng r(42);
  const double first = std::get<double>(space().add("u", uniform(0, 1)).sample(r).at("u"));
  rng again(42);
  BOOST_TEST(first == again.uniform_double());
}

BOOST_AUTO_TEST_CASE(varying_lists_the_non_constant_hyperparameters_in_name_order) {
  space s;
  s.add("z", uniform(0, 1)).add("a", constant(int64_t{1})).add("m", grid_search({int64_t{1}}));
  BOOST_TEST((s.varying() == std::vector<std::string>{"m", "z"}));
}

BOOST_AUTO_TEST_CASE(a_grid_enumerates_its_cross_product_with_the_first_name_fastest) {
  space s;
  s.add("b", grid_search({std::string("x"), std::string("y")}))
      .add("a", grid_search({int64_t{1}, int64_t{2}, int64_t{3}}))
      .add("c", uniform(0, 1));
  BOOST_TEST(s.grid_size() == 6);
  auto points = s.grid_points();
  BOOST_TEST_REQUIRE(points.size() == 6u);
  const char* expected[] = {"1x", "2x", "3x", "1y", "2y", "3y"};
  for (size_t i = 0; i < points.size(); ++i) {
    BOOST_TEST(points[i].size() == 2u);  // only grid dimensions are set
    BOOST_TEST(to_string(points[i].at("a")) + to_string(points[i].at("b")) == expected[i]);
  }
  BOOST_TEST(space().grid_size() == 1);
  BOOST_TEST(space().grid_points().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_grid_over_a_range_takes_count_evenly_spaced_points) {
  auto values = [](const domain& d) {
    space s;
    s.add("x", d);
    BOOST_TEST_REQUIRE(s.validate().is_ok(), s.validate().to_string());
    std::vector<std::string> out;
    for (const auto& p : s.grid_points())
      out.push_back(to_string(p.at("x")));
    BOOST_TEST(static_cast<int64_t>(out.size()) == s.grid_size());
    return out;
  };
  BOOST_TEST((values(grid(uniform(0, 1), 5)) ==
              std::vector<std::string>{"0", "0.25", "0.5", "0.75", "1"}));
  BOOST_TEST((values(grid(loguniform(1e-4, 1e-2), 3)) ==
              std::vector<std::string>{"0.0001", "0.001", "0.01"}));
  BOOST_TEST((values(grid(randint(1, 10), 4)) == std::vector<std::string>{"1", "4", "7", "10"}));
  // More points than integers: each integer once.
  BOOST_TEST((values(grid(randint(1, 3), 10)) == std::vector<std::string>{"1", "2", "3"}));
  BOOST_TEST((values(grid(uniform(2, 8), 1)) == std::vector<std::string>{"2"}));
}

BOOST_AUTO_TEST_CASE(each_malformed_domain_is_an_error_naming_its_hyperparameter) {
  BOOST_TEST(error_of("lr", loguniform(0, 1)) == "lr: log range needs 0 < low (got low 0)");
  BOOST_TEST(starts_with(error_of("lr", loguniform(-1, 1)), "lr: log range"));
  BOOST_TEST(error_of("width", randint(8, 2)) == "width: low 8 is more than high 2");
  BOOST_TEST(starts_with(error_of("p", uniform(1, 0.5)), "p: low 1 is more than high 0.5"));
  BOOST_TEST(error_of("opt", choice({})) == "opt: empty choice list");
  BOOST_TEST(error_of("opt", grid_search({})) == "opt: empty grid list");
  BOOST_TEST(starts_with(error_of("lr", grid(uniform(0, 1), 0)), "lr: a grid over a range needs a count"));
  BOOST_TEST(starts_with(error_of("q", quniform(0, 1, -0.5)), "q: q must be positive"));
  BOOST_TEST(starts_with(error_of("q", qrandint(0, 10, -2)), "q: q must be positive"));
  BOOST_TEST(starts_with(error_of("n", uniform(std::nan(""), 1)), "n: bounds must be finite"));
  BOOST_TEST(starts_with(error_of("n", uniform(0, std::numeric_limits<double>::infinity())),
                         "n: bounds must be finite"));
  BOOST_TEST(starts_with(error_of("gap", quniform(0.1, 0.2, 1)), "gap: no multiple of q"));
}

BOOST_AUTO_TEST_SUITE_END()
