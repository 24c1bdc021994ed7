// Trial records and result grids (best and sorted ignore NaN, not_found
// names the metric), sweep settings whose errors name the field, and the
// stoppers.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dtrain/tune/sweep.hpp"
#include "dtrain/tune/trial.hpp"

namespace {

using namespace dtrain::tune;
using dtrain::error_code;

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

trial_record trial(const std::string& id, const std::vector<double>& accuracy) {
  trial_record t;
  t.id = id;
  for (size_t i = 0; i < accuracy.size(); ++i)
    t.history.push_back({id, static_cast<int64_t>(i + 1), {{"validation_accuracy", accuracy[i]}}});
  return t;
}

result_grid three_trials() {
  result_grid g;
  g.metric = "validation_accuracy";
  g.trials = {trial("a", {0.5, 0.7, 0.6}), trial("b", {not_a_number, not_a_number}), trial("c", {0.8, not_a_number})};
  return g;
}

std::string validate_error(const sweep_config& c) {
  auto st = validate(c);
  BOOST_TEST(!st.is_ok());
  BOOST_TEST((st.code() == error_code::invalid_argument));
  return st.message();
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tune_results)

BOOST_AUTO_TEST_CASE(trial_statuses_print_in_ray_tunes_names) {
  BOOST_TEST(std::string(to_string(trial_status::pending)) == "PENDING");
  BOOST_TEST(std::string(to_string(trial_status::running)) == "RUNNING");
  BOOST_TEST(std::string(to_string(trial_status::stopped)) == "STOPPED");
  BOOST_TEST(std::string(to_string(trial_status::terminated)) == "TERMINATED");
  BOOST_TEST(std::string(to_string(trial_status::error)) == "ERROR");
}

BOOST_AUTO_TEST_CASE(a_trials_last_and_best_values_skip_nan) {
  trial_record t = trial("a", {0.5, 0.9, not_a_number, 0.6});
  BOOST_TEST(t.epochs() == 4);
  BOOST_TEST(t.last("validation_accuracy") == 0.6);
  BOOST_TEST(t.best("validation_accuracy", mode::max) == 0.9);
  BOOST_TEST(t.best("validation_accuracy", mode::min) == 0.5);
  BOOST_TEST(std::isnan(t.best("loss", mode::min)));
  BOOST_TEST(std::isnan(trial_record{}.last("loss")));
}

BOOST_AUTO_TEST_CASE(the_best_trial_is_never_one_with_only_nan) {
  result_grid g = three_trials();
  auto best = g.best();
  BOOST_TEST_REQUIRE(best.is_ok());
  BOOST_TEST((*best)->id == "c");
  auto worst = g.best("validation_accuracy", mode::min);
  BOOST_TEST_REQUIRE(worst.is_ok());
  BOOST_TEST((*worst)->id == "a");
}

BOOST_AUTO_TEST_CASE(sorted_puts_the_best_first_and_trials_without_a_value_last) {
  result_grid g = three_trials();
  std::vector<std::string> ids;
  for (const trial_record* t : g.sorted("validation_accuracy", mode::max))
    ids.push_back(t->id);
  BOOST_TEST((ids == std::vector<std::string>{"c", "a", "b"}));
  ids.clear();
  for (const trial_record* t : g.sorted("validation_accuracy", mode::min))
    ids.push_back(t->id);
  BOOST_TEST((ids == std::vector<std::string>{"a", "c", "b"}));
}

BOOST_AUTO_TEST_CASE(best_without_any_value_is_not_found_naming_the_metric) {
  result_grid g = three_trials();
  auto best = g.best("validation_loss", mode::min);
  BOOST_TEST_REQUIRE(!best.is_ok());
  BOOST_TEST((best.error().code() == error_code::not_found));
  BOOST_TEST(best.error().message().find("validation_loss") != std::string::npos,
             best.error().message());
  BOOST_TEST(!result_grid{}.best().is_ok());
}

BOOST_AUTO_TEST_CASE(default_sweep_settings_are_valid_and_every_bad_field_is_named) {
  BOOST_TEST(validate(sweep_config{}).is_ok());
  sweep_config c;
  c.metric = "val-acc";
  const std::string message = validate_error(c);
  BOOST_TEST(starts_with(message, "metric: 'val-acc'"), message);
  BOOST_TEST(message.find("validation_accuracy") != std::string::npos, message);
  c.metric = "validation_mae";  // an operator's own: only a trial can tell
  BOOST_TEST(validate(c).is_ok());
  auto with = [](auto change) { sweep_config c; change(c); return validate_error(c); };
  BOOST_TEST(starts_with(with([](auto& c) { c.searcher = "bayes"; }), "searcher:"));
  BOOST_TEST(with([](auto& c) { c.tpe_startup_trials = 0; }) ==
             "tpe_startup_trials: must be at least 1, got 0");
  BOOST_TEST(starts_with(with([](auto& c) { c.tpe_ei_candidates = 0; }), "tpe_ei_candidates:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.scheduler = "bohb"; }), "scheduler:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.pbt.burn_in = -1; }), "pbt.burn_in:"));
  BOOST_TEST(with([](auto& c) { c.num_samples = 0; }) == "num_samples: must be at least 1, got 0");
  BOOST_TEST(starts_with(with([](auto& c) { c.max_epochs = 0; }), "max_epochs:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.max_concurrent_trials = -1; }),
                         "max_concurrent_trials:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.asha.grace_period = 0; }), "asha.grace_period:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.asha.reduction_factor = 1; }),
                         "asha.reduction_factor:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.median.warmup_epochs = -1; }),
                         "median.warmup_epochs:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.median.min_completed = -1; }),
                         "median.min_completed:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.time_budget_seconds = -1; }),
                         "time_budget_seconds:"));
  BOOST_TEST(starts_with(with([](auto& c) { c.max_failed_trials = -2; }), "max_failed_trials:"));
}

BOOST_AUTO_TEST_CASE(the_metric_threshold_ends_the_sweep_in_its_direction) {
  auto up = make_metric_threshold("validation_accuracy", 0.9, mode::max);
  report r{"00003", 2, {{"validation_accuracy", 0.85}}};
  BOOST_TEST(!up->sweep_done(&r, 1.0));
  BOOST_TEST(!up->sweep_done(nullptr, 1.0));
  r.metrics["validation_accuracy"] = 0.9012;
  BOOST_TEST(up->sweep_done(&r, 1.0));
  BOOST_TEST(up->describe() == "validation_accuracy reached 0.9 (0.9012 by trial 00003)");
  BOOST_TEST(!up->trial_done(r));  // it ends the sweep, not one trial

  auto down = make_metric_threshold("validation_loss", 0.2, mode::min);
  report l{"t", 1, {{"validation_loss", 0.3}}};
  BOOST_TEST(!down->sweep_done(&l, 0));
  l.metrics["validation_loss"] = not_a_number;
  BOOST_TEST(!down->sweep_done(&l, 0));
  l.metrics["validation_loss"] = 0.2;
  BOOST_TEST(down->sweep_done(&l, 0));
}

BOOST_AUTO_TEST_CASE(the_time_budget_ends_the_sweep_once_spent) {
  auto budget = make_time_budget(60);
  BOOST_TEST(!budget->sweep_done(nullptr, 59.9));
  BOOST_TEST(budget->sweep_done(nullptr, 60.0));
  BOOST_TEST(budget->describe() == "time budget of 60 s spent");
}

BOOST_AUTO_TEST_CASE(max_epochs_ends_each_trial_at_its_last_epoch) {
  auto stop = make_max_epochs(3);
  BOOST_TEST(!stop->trial_done(report{"t", 2, {}}));
  BOOST_TEST(stop->trial_done(report{"t", 3, {}}));
  BOOST_TEST(!stop->sweep_done(nullptr, 1e9));
  BOOST_TEST(stop->describe() == "trial reached max_epochs 3");
}

BOOST_AUTO_TEST_CASE(make_stoppers_adds_the_budget_and_threshold_only_when_set) {
  sweep_config c;
  BOOST_TEST(make_stoppers(c).size() == 1u);
  c.time_budget_seconds = 10;
  c.has_stop_threshold = true;
  c.stop_threshold = 0.95;
  auto stoppers = make_stoppers(c);
  BOOST_TEST_REQUIRE(stoppers.size() == 3u);
  BOOST_TEST(stoppers[0]->describe().find("max_epochs") != std::string::npos);
  BOOST_TEST(stoppers[2]->describe() == "validation_accuracy >= 0.95");
}

BOOST_AUTO_TEST_CASE(make_searcher_repeats_a_grid_num_samples_times) {
  space s;
  s.add("opt", grid_search({std::string("adam"), std::string("sgd")}));
  sweep_config c;
  c.searcher = "grid";
  c.num_samples = 3;
  BOOST_TEST(make_searcher(s, c)->total() == 6);
}

BOOST_AUTO_TEST_SUITE_END()
