// Hyperband: its brackets and trial-to-bracket assignment against Optuna
// 3.1's numbers (tests/tune/scheduler_sequences/hyperband_bracket_ids.txt,
// written by tools/reference/make_scheduler_sequences.py), and cases by
// hand. Its decisions against Optuna's are replayed in schedulers_test.cpp
// with the other sequences.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <sstream>

#include "dtrain/tune/hyperband.hpp"
#include "dtrain/tune/sweep.hpp"
#include "support/test_util.hpp"

#ifndef DTRAIN_SOURCE_DIR
#error "tests/CMakeLists.txt defines DTRAIN_SOURCE_DIR for dtrain-core-test"
#endif

using namespace dtrain::tune;
using dtrain::error_code;

namespace {

constexpr auto go_on = decision::go_on;
constexpr auto stop = decision::stop;

std::unique_ptr<scheduler> hyperband(int64_t min_resource, int64_t max_resource, int64_t rf,
                                     const std::string& study = "sweep",
                                     mode direction = mode::max) {
  hyperband_options o;
  o.min_resource = min_resource;
  o.max_resource = max_resource;
  o.reduction_factor = rf;
  o.study_name = study;
  o.direction = direction;
  return std::move(make_hyperband(o).value());
}

// Trials t0, t1, ... added in that order (numbers 0, 1, ...).
void add_trials(scheduler& s, int n) {
  for (int i = 0; i < n; ++i)
    s.on_add("t" + std::to_string(i), config{});
}

bool names(const dtrain::status& s, const std::string& field) {
  return s.code() == error_code::invalid_argument && s.message().find(field) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hyperband_scheduler)

BOOST_AUTO_TEST_CASE(brackets_budgets_and_assignment_equal_optunas) {
  const std::string path = std::string(DTRAIN_SOURCE_DIR) +
                           "/tests/tune/scheduler_sequences/hyperband_bracket_ids.txt";
  std::istringstream in(dtrain::testing::read_file(path));
  std::vector<hyperband_bracket> brackets;
  int trials = 0, settings = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string study;
    int64_t lo = 0, hi = 0, rf = 0;
    if (line.rfind("# budgets ", 0) == 0) {
      std::string hash, budgets;
      words >> hash >> budgets >> study >> lo >> hi >> rf;
      brackets = hyperband_brackets(lo, hi, rf);
      std::vector<int64_t> want, got;
      for (int64_t b; words >> b;)
        want.push_back(b);
      for (const auto& b : brackets)
        got.push_back(b.budget);
      BOOST_TEST(got == want, line);
      ++settings;
      continue;
    }
    int64_t number = 0;
    size_t bracket = 0;
    if (!(words >> study >> lo >> hi >> rf >> number >> bracket))
      continue;
    BOOST_TEST(hyperband_bracket_of(study, number, brackets) == bracket, line);
    ++trials;
  }
  BOOST_TEST(settings == 6);
  BOOST_TEST(trials == 6 * 200);
}

BOOST_AUTO_TEST_CASE(bracket_counts_follow_pythons_floating_point_log) {
  auto firsts = [](int64_t lo, int64_t hi, int64_t rf) {
    std::vector<int64_t> out;
    for (const auto& b : hyperband_brackets(lo, hi, rf))
      out.push_back(b.first_rung);
    return out;
  };
  // math.log(243, 3) is 4.999999999999999 and math.log(1000, 10)
  // 2.9999999999999996: Optuna makes 5 and 3 brackets there, not 6 and 4.
  BOOST_TEST((firsts(1, 243, 3) == std::vector<int64_t>{1, 3, 9, 27, 81}));
  BOOST_TEST((firsts(1, 1000, 10) == std::vector<int64_t>{1, 10, 100}));
  BOOST_TEST((firsts(1, 27, 3) == std::vector<int64_t>{1, 3, 9, 27}));
  BOOST_TEST((firsts(2, 15, 2) == std::vector<int64_t>{2, 4, 8}));
  BOOST_TEST((firsts(3, 3, 3) == std::vector<int64_t>{3}));
  BOOST_TEST(firsts(3, 2, 3).empty());
  const auto b = hyperband_brackets(1, 9, 3);
  BOOST_REQUIRE(b.size() == 3u);
  BOOST_TEST(b[0].budget == 9);  // ceil(3 * 3^2 / 3)
  BOOST_TEST(b[1].budget == 5);  // ceil(3 * 3 / 2)
  BOOST_TEST(b[2].budget == 3);
}

BOOST_AUTO_TEST_CASE(each_bracket_judges_only_its_own_trials) {
  // Study "sweep", (1, 9, 3): trials 1, 2, 3 are in bracket 0 (rungs 1, 3,
  // 9), trial 0 in bracket 1 (rungs 3, 9), trial 4 in bracket 2 (rung 9).
  auto s = hyperband(1, 9, 3);
  add_trials(*s, 5);
  BOOST_TEST((s->on_result("t1", 1, 0.9) == go_on));
  BOOST_TEST((s->on_result("t2", 1, 0.5) == stop));   // 2 values at rung 1: must be the best
  BOOST_TEST((s->on_result("t0", 1, 0.1) == go_on));  // bracket 1 has no rung at 1
  BOOST_TEST((s->on_result("t1", 3, 0.9) == go_on));
  // Worse than t1 at epoch 3, but t1 is in another bracket.
  BOOST_TEST((s->on_result("t0", 3, 0.1) == go_on));
  BOOST_TEST((s->on_result("t3", 1, 0.95) == go_on));
  BOOST_TEST((s->on_result("t3", 3, 0.2) == stop));  // bracket 0's rung 3 holds t1's 0.9
  for (int64_t e = 1; e < 9; ++e)
    BOOST_TEST((s->on_result("t4", e, 0.0) == go_on));
  BOOST_TEST((s->on_result("t4", 9, 0.0) == go_on));  // the first at bracket 2's rung
}

BOOST_AUTO_TEST_CASE(a_trials_number_is_the_order_it_was_added_in_not_its_name) {
  // Added as t1, t0: t1 is trial 0 (bracket 1, first rung 3), so two
  // values at epoch 1 do not meet.
  auto s = hyperband(1, 9, 3);
  s->on_add("t1", config{});
  s->on_add("t0", config{});
  BOOST_TEST((s->on_result("t0", 1, 0.9) == go_on));
  BOOST_TEST((s->on_result("t1", 1, 0.1) == go_on));
}

BOOST_AUTO_TEST_CASE(auto_max_resource_judges_nothing_until_a_trial_completes) {
  auto s = hyperband(1, hyperband_options::auto_max_resource, 3);
  add_trials(*s, 3);
  for (int64_t e = 1; e <= 8; ++e)
    BOOST_TEST((s->on_result("t0", e, 0.9) == go_on));
  BOOST_TEST((s->on_result("t1", 1, 0.1) == go_on));  // t1 in bracket 0, but nothing is judged
  BOOST_TEST(s->describe().find("max_resource auto") != std::string::npos, s->describe());
  s->on_end("t0", trial_end::completed);  // max_resource = 8 + 1: brackets as (1, 9, 3)
  BOOST_TEST((s->on_result("t2", 1, 0.5) == go_on));  // t0's and t1's values were never recorded
  // t1 is judged at rung 1 now, with this report's value.
  BOOST_TEST((s->on_result("t1", 2, 0.1) == stop));
  BOOST_TEST(s->describe().find("max_resource 9, 3 brackets") != std::string::npos, s->describe());
}

BOOST_AUTO_TEST_CASE(auto_max_resource_below_min_resource_never_stops) {
  auto s = hyperband(3, hyperband_options::auto_max_resource, 3);
  add_trials(*s, 3);
  BOOST_TEST((s->on_result("t0", 1, 0.5) == go_on));
  s->on_end("t0", trial_end::completed);  // max_resource 2 < 3: no bracket, as Optuna
  BOOST_TEST((s->on_result("t1", 3, 0.9) == go_on));
  BOOST_TEST((s->on_result("t2", 3, 0.1) == go_on));
  BOOST_TEST((s->on_result("t2", 9, 0.0) == go_on));
  BOOST_TEST(s->describe().find("no bracket, no trial is stopped") != std::string::npos,
             s->describe());
}

BOOST_AUTO_TEST_CASE(only_completed_trials_decide_auto_max_resource) {
  auto s = hyperband(1, hyperband_options::auto_max_resource, 3);
  add_trials(*s, 4);
  BOOST_TEST((s->on_result("t0", 1, 0.9) == go_on));
  s->on_end("t0", trial_end::failed);
  BOOST_TEST((s->on_result("t1", 1, 0.9) == go_on));
  s->on_end("t1", trial_end::stopped);
  BOOST_TEST((s->on_result("t2", 1, 0.9) == go_on));
  BOOST_TEST((s->on_result("t3", 1, 0.1) == go_on));  // still no brackets
  BOOST_TEST(s->describe().find("max_resource auto") != std::string::npos, s->describe());
}

BOOST_AUTO_TEST_CASE(bad_options_are_errors_that_name_the_field) {
  hyperband_options o;
  o.max_resource = 9;
  BOOST_TEST(make_hyperband(o).is_ok());
  o.min_resource = 0;
  BOOST_TEST(names(make_hyperband(o).error(), "hyperband.min_resource"));
  o = {};
  o.max_resource = 9;
  o.reduction_factor = 1;
  BOOST_TEST(names(make_hyperband(o).error(), "hyperband.reduction_factor"));
  o = {};
  o.min_resource = 4;
  o.max_resource = 3;
  BOOST_TEST(names(make_hyperband(o).error(), "hyperband.max_resource"));
  o.max_resource = 0;  // without a stand-in
  BOOST_TEST(names(make_hyperband(o).error(), "hyperband.max_resource"));
  BOOST_TEST(check_hyperband(o, 4).is_ok());  // the sweep's max_epochs stands in
  BOOST_TEST(names(check_hyperband(o, 3), "hyperband.max_resource"));
  o.max_resource = hyperband_options::auto_max_resource;
  BOOST_TEST(make_hyperband(o).is_ok());
  o.min_resource = 1;
  o.max_resource = std::numeric_limits<int64_t>::max();
  BOOST_TEST(names(make_hyperband(o).error(), "hyperband.max_resource"));
}

BOOST_AUTO_TEST_CASE(make_scheduler_takes_direction_max_epochs_and_study_from_the_sweep) {
  sweep_config c;
  c.scheduler = "hyperband";
  c.direction = mode::min;
  c.max_epochs = 9;
  c.hyperband.study_name = "sweep";
  BOOST_TEST(validate(c).is_ok());
  auto s = make_scheduler(c);
  BOOST_REQUIRE(s.is_ok());
  BOOST_TEST((*s)->describe().find("max_resource 9, 3 brackets") != std::string::npos,
             (*s)->describe());
  (*s)->on_add("a", config{});  // trial 0: bracket 1
  (*s)->on_add("b", config{});  // trial 1: bracket 0
  (*s)->on_add("c", config{});  // trial 2: bracket 0
  BOOST_TEST(((*s)->on_result("b", 1, 1.0) == go_on));
  BOOST_TEST(((*s)->on_result("c", 1, 2.0) == stop));  // worse when minimising
  c.hyperband.min_resource = 10;
  BOOST_TEST(names(validate(c), "hyperband.max_resource"));
  BOOST_TEST(names(make_scheduler(c).error(), "hyperband.max_resource"));
  c.scheduler = "asha";  // hyperband's knobs are not checked for another scheduler
  BOOST_TEST(validate(c).is_ok());
}

BOOST_AUTO_TEST_CASE(describe_names_the_brackets) {
  BOOST_TEST(hyperband(1, 9, 3, "fmnist")->describe() ==
             "Hyperband (as Optuna's HyperbandPruner): reduction factor 3, min_resource 1; "
             "max_resource 9, 3 brackets: bracket 0 rungs at epochs 1, 3, 9 (9 of 17 trials); "
             "bracket 1 rungs at epochs 3, 9 (5 of 17 trials); bracket 2 rungs at epochs 9 "
             "(3 of 17 trials); a trial's bracket is crc32(\"fmnist_<trial number>\") mod 17; "
             "within a bracket a trial is kept at a rung while it is within the best max(n/3, 1) "
             "of the bracket's n trials there so far");
}

BOOST_AUTO_TEST_SUITE_END()
