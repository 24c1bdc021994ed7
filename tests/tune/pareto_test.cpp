// Pareto helpers (pareto.hpp): domination and constrained domination,
// fronts, crowding distance and hypervolume by hand, then against Optuna
// 3.1's answers on the point sets of tests/tune/pareto_cases.txt
// (tools/reference/make_pareto_cases.py).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dtrain/tune/pareto.hpp"

#ifndef DTRAIN_SOURCE_DIR
#error "tests/CMakeLists.txt defines DTRAIN_SOURCE_DIR for dtrain-core-test"
#endif

namespace {

using namespace dtrain::tune;

constexpr double inf = std::numeric_limits<double>::infinity();

// One case of pareto_cases.txt.
struct reference_case {
  std::string name, kind;
  size_t size = 0;
  point reference;
  std::vector<point> points;
  std::vector<constraint_values> constraints;
  std::string expect;
};

std::vector<double> numbers(std::istringstream& in) {
  std::vector<double> out;
  std::string word;
  while (in >> word && word != ";")
    out.push_back(std::stod(word));
  return out;
}

std::vector<reference_case> read_cases() {
  const std::string path = std::string(DTRAIN_SOURCE_DIR) + "/tests/tune/pareto_cases.txt";
  std::ifstream file(path);
  BOOST_TEST_REQUIRE(file.good(), "cannot read " << path);
  std::vector<reference_case> out;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    std::string head;
    in >> head;
    if (head == "case") {
      out.emplace_back();
      in >> out.back().name >> out.back().kind >> out.back().size;
    } else if (head == "reference") {
      out.back().reference = numbers(in);
    } else if (head == "point") {
      out.back().points.push_back(numbers(in));
      auto rest = numbers(in);
      if (!rest.empty())
        out.back().constraints.push_back(rest);
    } else if (head == "expect") {
      std::getline(in, out.back().expect);
    }
  }
  return out;
}

std::string joined(const std::vector<size_t>& xs) {
  std::string out;
  for (size_t x : xs)
    out += (out.empty() ? "" : " ") + std::to_string(x);
  return out;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(' ') - first + 1);
}

} // namespace

BOOST_AUTO_TEST_SUITE(pareto)

BOOST_AUTO_TEST_CASE(a_point_dominates_when_no_worse_everywhere_and_not_equal) {
  BOOST_TEST(dominates({1, 2}, {2, 2}));
  BOOST_TEST(!dominates({2, 2}, {1, 2}));
  BOOST_TEST(!dominates({1, 2}, {1, 2}));  // equal: neither
  BOOST_TEST(!dominates({1, 3}, {2, 2}));
  BOOST_TEST(!dominates({2, 2}, {1, 3}));
  BOOST_TEST(dominates({0, 0, 0}, {0, 0, inf}));
}

BOOST_AUTO_TEST_CASE(maximized_objectives_are_negated) {
  BOOST_TEST(to_minimize(3.0, mode::max) == -3.0);
  BOOST_TEST(to_minimize(3.0, mode::min) == 3.0);
  const point p = to_minimize({0.9, 120.0}, {mode::max, mode::min});
  BOOST_TEST(p == (point{-0.9, 120.0}));
  // accuracy 0.9 with 120 parameters beats accuracy 0.8 with 150.
  BOOST_TEST(dominates(p, to_minimize({0.8, 150.0}, {mode::max, mode::min})));
}

BOOST_AUTO_TEST_CASE(constrained_domination_puts_feasible_first_then_the_smaller_violation) {
  BOOST_TEST(feasible({-1, 0}));
  BOOST_TEST(!feasible({-1, 0.5}));
  BOOST_TEST(violation({-3, 0.5, 2}) == 2.5);
  // Feasible beats infeasible whatever the objectives.
  BOOST_TEST(constrained_dominates({9, 9}, {0}, {0, 0}, {0.1}));
  BOOST_TEST(!constrained_dominates({0, 0}, {0.1}, {9, 9}, {0}));
  // Both infeasible: the smaller total violation wins, objectives aside.
  BOOST_TEST(constrained_dominates({9, 9}, {1, -5}, {0, 0}, {0.5, 0.6}));
  BOOST_TEST(!constrained_dominates({0, 0}, {0.5, 0.6}, {9, 9}, {1, -5}));
  BOOST_TEST(!constrained_dominates({0, 0}, {1}, {9, 9}, {1}));  // equal violations
  // Both feasible: plain domination.
  BOOST_TEST(constrained_dominates({0, 0}, {-1}, {1, 1}, {0}));
  BOOST_TEST(!constrained_dominates({0, 2}, {-1}, {1, 1}, {0}));
}

BOOST_AUTO_TEST_CASE(non_dominated_sort_groups_points_by_front) {
  // Fronts by hand: {(0,3),(1,1),(3,0)}, {(2,2),(3,1)}, {(3,3)}.
  const std::vector<point> points = {{2, 2}, {0, 3}, {3, 3}, {1, 1}, {3, 0}, {3, 1}};
  auto fronts = non_dominated_sort(points);
  BOOST_TEST_REQUIRE(fronts.size() == 3u);
  for (auto& f : fronts)
    std::sort(f.begin(), f.end());
  BOOST_TEST(fronts[0] == (std::vector<size_t>{1, 3, 4}));
  BOOST_TEST(fronts[1] == (std::vector<size_t>{0, 5}));
  BOOST_TEST(fronts[2] == (std::vector<size_t>{2}));
  BOOST_TEST(pareto_front(points) == (std::vector<size_t>{1, 3, 4}));
}

BOOST_AUTO_TEST_CASE(the_pareto_front_takes_feasible_points_first) {
  const std::vector<point> points = {{0, 0}, {5, 5}, {6, 4}, {5, 7}, {1, 1}};
  // Only 1, 2 and 3 are feasible (3 dominated by 1); 4 violates less than 0.
  const std::vector<constraint_values> c = {{2}, {0}, {-1}, {-0.5}, {1}};
  BOOST_TEST(pareto_front(points, c) == (std::vector<size_t>{1, 2}));
  // No feasible point: the least violation leads.
  const std::vector<constraint_values> none = {{2}, {3}, {3}, {2}, {1}};
  BOOST_TEST(pareto_front(points, none) == (std::vector<size_t>{4}));
}

BOOST_AUTO_TEST_CASE(crowding_distance_of_a_front_by_hand) {
  // Per objective the range is 4; the extremes are infinitely far. (1,2):
  // (2-0)/4 + (4-1)/4 = 1.25; (2,1): (4-1)/4 + (2-0)/4 = 1.25.
  const std::vector<point> points = {{0, 4}, {1, 2}, {2, 1}, {4, 0}};
  const auto d = crowding_distance(points, {0, 1, 2, 3});
  BOOST_TEST(d[0] == inf);
  BOOST_TEST(d[1] == 1.25);
  BOOST_TEST(d[2] == 1.25);
  BOOST_TEST(d[3] == inf);
  const auto sorted = crowding_distance_sort(points, {1, 2, 0, 3});
  BOOST_TEST(std::isinf(crowding_distance(points, {0, 1, 2, 3})[sorted[0]]));
  BOOST_TEST(std::isinf(crowding_distance(points, {0, 1, 2, 3})[sorted[1]]));
}

BOOST_AUTO_TEST_CASE(hypervolume_by_hand_in_two_and_three_dimensions) {
  // Two boxes of 2 overlapping in 1.
  BOOST_TEST(*hypervolume({{1, 2}, {2, 1}}, {3, 3}) == 3.0);
  // A dominated point and a duplicate add nothing.
  BOOST_TEST(*hypervolume({{1, 2}, {2, 1}, {2, 2}, {1, 2}}, {3, 3}) == 3.0);
  BOOST_TEST(*hypervolume({{0, 0, 0}}, {1, 2, 3}) == 6.0);
  // 4 + 2 - the shared unit cube.
  BOOST_TEST(*hypervolume({{0, 0, 1}, {1, 1, 0}}, {2, 2, 2}) == 5.0);
  BOOST_TEST(*hypervolume({{0, 0, 1, 0}, {1, 1, 0, 0}}, {2, 2, 2, 1}) == 5.0);
  BOOST_TEST(*hypervolume({}, {1, 1}) == 0.0);
  BOOST_TEST(*hypervolume({{1, 1}}, {1, 1}) == 0.0);  // on the reference
}

BOOST_AUTO_TEST_CASE(hypervolume_refuses_points_beyond_the_reference) {
  auto beyond = hypervolume({{0, 0}, {0.5, 1.5}}, {1, 1});
  BOOST_TEST_REQUIRE(!beyond);
  BOOST_TEST(beyond.error().message().find("point 1 coordinate 1") != std::string::npos,
             beyond.error().message());
  BOOST_TEST(!hypervolume({{0, 0, 0}}, {1, 1}));
  BOOST_TEST(!hypervolume({{std::nan(""), 0}}, {1, 1}));
}

BOOST_AUTO_TEST_CASE(every_case_matches_optuna_3_1) {
  const auto cases = read_cases();
  BOOST_TEST_REQUIRE(cases.size() >= 20u);
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      if (c.kind == "hypervolume") {
        auto hv = hypervolume(c.points, c.reference);
        BOOST_TEST_REQUIRE(!!hv);
        BOOST_TEST(*hv == std::stod(c.expect), boost::test_tools::tolerance(1e-12));
      } else if (c.kind == "sort") {
        std::string got;
        for (const auto& f : non_dominated_sort(c.points, c.constraints))
          got += (got.empty() ? "" : " | ") + joined(f);
        BOOST_TEST(got == trimmed(c.expect));
      } else if (c.kind == "crowding") {
        std::vector<size_t> all(c.points.size());
        for (size_t i = 0; i < all.size(); ++i)
          all[i] = i;
        const auto d = crowding_distance(c.points, all);
        std::istringstream want(c.expect);
        for (size_t i = 0; i < d.size(); ++i) {
          std::string w;
          want >> w;
          const double expected = std::stod(w);
          BOOST_TEST_INFO("point " << i);
          if (std::isinf(expected))
            BOOST_TEST(d[i] == expected);
          else
            BOOST_TEST(d[i] == expected, boost::test_tools::tolerance(1e-12));
        }
      } else if (c.kind == "elite") {
        BOOST_TEST(joined(select_elite(c.points, c.constraints, c.size)) == trimmed(c.expect));
      } else if (c.kind == "front") {
        BOOST_TEST(joined(pareto_front(c.points)) == trimmed(c.expect));
      } else {
        BOOST_FAIL("unknown case kind " << c.kind);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
