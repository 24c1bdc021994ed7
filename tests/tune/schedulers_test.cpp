// Schedulers: every decision of the event logs in tests/tune/scheduler_sequences against
// Optuna 3.1's (tools/reference/make_scheduler_sequences.py), then cases
// computed by hand, Ray's percentile rule among them (Optuna lacks it).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "dtrain/tune/hyperband.hpp"
#include "dtrain/tune/percentile.hpp"
#include "dtrain/tune/scheduler.hpp"
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
const double not_a_number = std::numeric_limits<double>::quiet_NaN();

std::unique_ptr<scheduler> asha(int64_t grace, int64_t rf, int64_t max_t, mode direction = mode::max,
                                asha_options::rule rule = asha_options::rule::top_k) {
  asha_options o;
  o.grace_period = grace;
  o.reduction_factor = rf;
  o.max_t = max_t;
  o.direction = direction;
  o.keep_rule = rule;
  return std::move(make_asha(o).value());
}

std::unique_ptr<scheduler> percentile(int64_t grace, int64_t rf, int64_t max_t) {
  return asha(grace, rf, max_t, mode::max, asha_options::rule::percentile);
}

std::unique_ptr<scheduler> median(int64_t warmup, int64_t min_completed, mode direction = mode::max) {
  median_options o;
  o.warmup_epochs = warmup;
  o.min_completed = min_completed;
  o.direction = direction;
  return std::move(make_median(o).value());
}

// Reports `values` for epochs 1, 2, ... and completes the trial.
void complete(scheduler& s, const std::string& trial, const std::vector<double>& values) {
  for (size_t e = 0; e < values.size(); ++e)
    BOOST_REQUIRE(s.on_result(trial, static_cast<int64_t>(e) + 1, values[e]) == go_on);
  s.on_end(trial, trial_end::completed);
}

// The tuner's interleaving (as the generator's): `slots` filled in id
// order; each tick every running trial reports its next epoch in id order;
// freed slots are refilled at the end of the tick. Returns each trial's last
// epoch.
std::vector<int64_t> run_sweep(scheduler& s, const std::vector<std::function<double(int64_t)>>& curves,
                               int64_t epochs, size_t slots) {
  std::vector<int64_t> last(curves.size(), 0);
  std::vector<size_t> running;
  size_t next = 0;
  auto fill = [&] {
    while (running.size() < slots && next < curves.size())
      running.push_back(next++);
  };
  fill();
  while (!running.empty()) {
    for (size_t i : std::vector<size_t>(running)) {
      const int64_t epoch = ++last[i];
      const std::string id = "t" + std::to_string(i);
      const bool stopped = s.on_result(id, epoch, curves[i](epoch)) == stop;
      if (stopped || epoch == epochs) {
        s.on_end(id, stopped ? trial_end::stopped : trial_end::completed);
        running.erase(std::find(running.begin(), running.end(), i));
      }
    }
    fill();
  }
  return last;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      out.push_back(line);
  return out;
}

// "# pruner sha min_resource=2 reduction_factor=3 direction=maximize max_t=8",
// "# pruner hyperband study_name=s min_resource=1 max_resource=9|auto ..."
std::unique_ptr<scheduler> from_header(const std::string& line) {
  std::istringstream in(line);
  std::string hash, pruner, kind;
  in >> hash >> pruner >> kind;
  std::map<std::string, std::string> p;
  for (std::string word; in >> word;) {
    const auto eq = word.find('=');
    p[word.substr(0, eq)] = word.substr(eq + 1);
  }
  const mode direction = p.at("direction") == "maximize" ? mode::max : mode::min;
  if (kind == "sha")
    return asha(std::stoll(p.at("min_resource")), std::stoll(p.at("reduction_factor")),
                p.count("max_t") ? std::stoll(p.at("max_t")) : 0, direction);
  if (kind == "hyperband") {
    hyperband_options o;
    o.direction = direction;
    o.study_name = p.at("study_name");
    o.min_resource = std::stoll(p.at("min_resource"));
    o.max_resource = p.at("max_resource") == "auto" ? hyperband_options::auto_max_resource
                                                     : std::stoll(p.at("max_resource"));
    o.reduction_factor = std::stoll(p.at("reduction_factor"));
    return std::move(make_hyperband(o).value());
  }
  BOOST_REQUIRE_EQUAL(kind, "median");
  return median(std::stoll(p.at("n_warmup_steps")), std::stoll(p.at("n_startup_trials")), direction);
}

// Replays one log; returns the decisions compared, or -1 after a mismatch.
int replay_log(const std::string& events_path) {
  const std::string stem = events_path.substr(0, events_path.size() - std::string(".events").size());
  const auto events = lines_of(dtrain::testing::read_file(events_path));
  const auto decisions = lines_of(dtrain::testing::read_file(stem + ".decisions"));
  BOOST_REQUIRE_MESSAGE(!events.empty() && events[0].rfind("# pruner", 0) == 0,
                        events_path << ": no '# pruner' header");
  auto s = from_header(events[0]);
  size_t next = 0;
  for (size_t n = 1; n < events.size(); ++n) {
    std::istringstream in(events[n]);
    std::string what, trial;
    in >> what >> trial;
    if (what == "start") {  // Optuna's study.ask(): the trial's number is its start's rank
      s->on_add(trial, config{});
      continue;
    }
    if (what == "complete" || what == "fail") {
      s->on_end(trial, what == "complete" ? trial_end::completed : trial_end::failed);
      continue;
    }
    if (what != "report")
      continue;
    std::string epoch, value;
    in >> epoch >> value;
    const decision got = s->on_result(trial, std::stoll(epoch), std::strtod(value.c_str(), nullptr));
    const std::string mine = got == stop ? "prune" : "keep";
    const std::string want_line = next < decisions.size() ? decisions[next] : "(none)";
    ++next;
    if (want_line != "decision " + trial + " " + epoch + " " + mine) {
      BOOST_ERROR(events_path << " line " << n + 1 << ": trial " << trial << " epoch " << epoch
                              << " value " << value << ": dtrain says " << mine
                              << ", Optuna's line is '" << want_line << "'");
      return -1;
    }
    if (got == stop)
      s->on_end(trial, trial_end::stopped);
  }
  BOOST_TEST(next == decisions.size(), stem << ".decisions has lines past the log's reports");
  return static_cast<int>(next);
}

bool names(const dtrain::status& s, const std::string& field) {
  return s.code() == error_code::invalid_argument && s.message().find(field) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(schedulers)

BOOST_AUTO_TEST_CASE(every_decision_of_the_recorded_sequences_equals_optunas) {
  const std::string dir = std::string(DTRAIN_SOURCE_DIR) + "/tests/tune/scheduler_sequences";
  int logs = 0, decisions = 0;
  for (const std::string& name : dtrain::testing::entries(dir)) {
    if (name.size() < 7 || name.substr(name.size() - 7) != ".events")
      continue;
    const int n = replay_log(dir + "/" + name);
    if (n >= 0)
      decisions += n;
    ++logs;
  }
  BOOST_TEST_MESSAGE(logs << " logs, " << decisions << " decisions compared with Optuna 3.1");
  BOOST_TEST(logs >= 72);
  BOOST_TEST(decisions >= 8900);
}

// ---- ASHA, top-k rule

BOOST_AUTO_TEST_CASE(rung_lists_come_from_integer_multiplication) {
  auto rungs = [](int64_t grace, int64_t rf, int64_t max_t) {
    asha_options o;
    o.grace_period = grace;
    o.reduction_factor = rf;
    o.max_t = max_t;
    return asha_rungs(o);
  };
  // ln(1000)/ln(10) and ln(243)/ln(3) fall just short of 3 and 5 in libm.
  BOOST_TEST((rungs(1, 10, 1000) == std::vector<int64_t>{1, 10, 100, 1000}));
  BOOST_TEST((rungs(1, 3, 243) == std::vector<int64_t>{1, 3, 9, 27, 81, 243}));
  BOOST_TEST((rungs(1, 4, 100) == std::vector<int64_t>{1, 4, 16, 64}));
  BOOST_TEST((rungs(1, 2, 15) == std::vector<int64_t>{1, 2, 4, 8}));
  BOOST_TEST((rungs(5, 3, 100) == std::vector<int64_t>{5, 15, 45}));
  BOOST_TEST((rungs(3, 3, 3) == std::vector<int64_t>{3}));
  // No max_t: up to the last rung int64 holds, 4^31 = 2^62.
  const auto open = rungs(1, 4, 0);
  BOOST_TEST(open.size() == 32u);
  BOOST_TEST(open.back() == int64_t{1} << 62);
}

BOOST_AUTO_TEST_CASE(the_first_trial_at_a_rung_goes_on) {
  auto s = asha(1, 4, 16);
  BOOST_TEST((s->on_result("a", 1, -1000.0) == go_on));
  BOOST_TEST((s->on_result("a", 4, -1000.0) == go_on));
  BOOST_TEST((s->on_result("a", 16, -1000.0) == go_on));
}

BOOST_AUTO_TEST_CASE(with_fewer_values_than_the_reduction_factor_a_trial_must_be_the_best_so_far) {
  auto s = asha(1, 4, 16);
  BOOST_TEST((s->on_result("a", 1, 5.0) == go_on));
  BOOST_TEST((s->on_result("b", 1, 4.0) == stop));
  BOOST_TEST((s->on_result("c", 1, 6.0) == go_on));
  // Four values: the best max(4/4, 1) = 1 goes on; 5.5 is second.
  BOOST_TEST((s->on_result("d", 1, 5.5) == stop));
  auto m = asha(1, 4, 16, mode::min);
  BOOST_TEST((m->on_result("a", 1, 5.0) == go_on));
  BOOST_TEST((m->on_result("b", 1, 6.0) == stop));
  BOOST_TEST((m->on_result("c", 1, 4.0) == go_on));
}

BOOST_AUTO_TEST_CASE(ties_are_kept) {
  auto s = asha(1, 2, 4);
  BOOST_TEST((s->on_result("a", 1, 5.0) == go_on));
  BOOST_TEST((s->on_result("b", 1, 5.0) == go_on));
  BOOST_TEST((s->on_result("c", 1, 5.0) == go_on));
}

BOOST_AUTO_TEST_CASE(a_nan_stops_a_trial_at_a_rung_but_not_between_rungs) {
  auto s = asha(2, 2, 8);  // rungs 2, 4, 8
  BOOST_TEST((s->on_result("a", 1, not_a_number) == go_on));  // Optuna judges rungs only
  BOOST_TEST((s->on_result("a", 2, not_a_number) == stop));
  // Nothing was recorded: the next trial is the first at rung 2.
  BOOST_TEST((s->on_result("b", 2, -1.0) == go_on));
  BOOST_TEST((s->on_result("b", 3, not_a_number) == go_on));
  BOOST_TEST((s->on_result("b", 4, not_a_number) == stop));
}

BOOST_AUTO_TEST_CASE(a_report_that_jumps_rungs_is_recorded_at_each) {
  auto s = asha(1, 2, 16);  // rungs 1, 2, 4, 8, 16
  BOOST_TEST((s->on_result("a", 4, 5.0) == go_on));  // at rungs 1, 2 and 4
  BOOST_TEST((s->on_result("b", 1, 4.0) == stop));   // rung 1: [5, 4]
  BOOST_TEST((s->on_result("d", 1, 6.0) == go_on));  // rung 1: [5, 4, 6]: keep 1
  BOOST_TEST((s->on_result("d", 2, 4.9) == stop));   // rung 2: [5, 4.9]
}

BOOST_AUTO_TEST_CASE(stopped_and_failed_trials_values_still_compete) {
  auto s = asha(1, 2, 4);
  BOOST_TEST((s->on_result("a", 1, 5.0) == go_on));
  BOOST_TEST((s->on_result("b", 1, 3.0) == stop));
  s->on_end("b", trial_end::stopped);
  BOOST_TEST((s->on_result("c", 1, 6.0) == go_on));
  // [5, 3, 6, 5]: the best 2 go on. Without b's 3 it would be 1 of 3.
  BOOST_TEST((s->on_result("d", 1, 5.0) == go_on));

  auto f = asha(1, 2, 4);
  BOOST_TEST((f->on_result("a", 1, 5.0) == go_on));
  f->on_end("a", trial_end::failed);
  BOOST_TEST((f->on_result("b", 1, 4.0) == stop));
}

BOOST_AUTO_TEST_CASE(max_t_as_a_rung_is_judged_on_the_final_epoch) {
  auto s = asha(1, 2, 2);  // rungs 1, 2
  BOOST_TEST((s->on_result("a", 1, 1.0) == go_on));
  BOOST_TEST((s->on_result("a", 2, 5.0) == go_on));
  s->on_end("a", trial_end::completed);
  BOOST_TEST((s->on_result("b", 1, 2.0) == go_on));
  BOOST_TEST((s->on_result("b", 2, 4.0) == stop));  // Optuna prunes here too
  // Past max_t there is no rung: nothing is judged.
  BOOST_TEST((s->on_result("c", 1, 3.0) == go_on));
  BOOST_TEST((s->on_result("c", 2, 6.0) == go_on));
  BOOST_TEST((s->on_result("c", 4, -100.0) == go_on));
}

BOOST_AUTO_TEST_CASE(asha_stops_the_slow_starters_with_the_best_final_values_at_epoch_one) {
  // The notes' §7.4 setting with curves a - b/t of our own; the stop epochs
  // are Optuna 3.1's (SuccessiveHalvingPruner(1, 2), in-memory).
  const std::vector<double> a{0.70, 0.62, 0.80, 0.66, 0.90, 0.57, 0.75, 0.84, 0.52, 0.93, 0.64, 0.78};
  const std::vector<double> b{0.30, 0.40, 0.50, 0.35, 0.70, 0.25, 0.25, 0.45, 0.33, 0.75, 0.45, 0.40};
  std::vector<std::function<double(int64_t)>> curves;
  for (size_t i = 0; i < a.size(); ++i)
    curves.push_back([=](int64_t t) { return a[i] - b[i] / static_cast<double>(t); });
  auto s = asha(1, 2, 16);
  const auto last = run_sweep(*s, curves, 16, 4);
  BOOST_TEST((last == std::vector<int64_t>{16, 1, 1, 2, 1, 2, 16, 16, 1, 1, 1, 4}));
  // Trials 9 and 4 end best at epoch 16 (0.883, 0.856).
  BOOST_TEST(last[9] == 1);
  BOOST_TEST(last[4] == 1);
}

// ---- ASHA, Ray's percentile rule (hand-computed, the notes' §7.5)

BOOST_AUTO_TEST_CASE(the_percentile_rule_stops_below_the_interpolated_cut_only) {
  // rf 4, the others at the rung {0.5, 0.9}: cut = 0.5 + 0.75 * 0.4 = 0.8.
  for (const auto& [value, want] : {std::pair{0.79, stop}, std::pair{0.8, go_on}}) {
    auto s = percentile(1, 4, 1);
    BOOST_TEST((s->on_result("a", 1, 0.5) == go_on));
    BOOST_TEST((s->on_result("b", 1, 0.9) == go_on));
    BOOST_TEST((s->on_result("c", 1, value) == want), "value " << value);
  }
}

BOOST_AUTO_TEST_CASE(constant_curves_stop_later_under_the_percentile_rule_than_under_top_k) {
  const std::vector<std::function<double(int64_t)>> curves{
      [](int64_t) { return 5.0; }, [](int64_t) { return 3.0; }, [](int64_t) { return 4.0; }};
  auto ray = percentile(1, 2, 8);
  BOOST_TEST((run_sweep(*ray, curves, 8, 1) == std::vector<int64_t>{8, 1, 2}));
  auto optuna = asha(1, 2, 8);
  BOOST_TEST((run_sweep(*optuna, curves, 8, 1) == std::vector<int64_t>{8, 1, 1}));
}

BOOST_AUTO_TEST_CASE(the_percentile_rule_fills_skipped_rungs_with_later_reports) {
  auto s = percentile(1, 4, 16);  // rungs 1, 4, 16
  BOOST_TEST((s->on_result("b", 1, 0.5) == go_on));
  BOOST_TEST((s->on_result("a", 5, 1.0) == go_on));   // rung 4 only
  BOOST_TEST((s->on_result("a", 10, 1.0) == go_on));  // now rung 1
  // Rung 1 holds {0.5, 1.0}: cut 0.875. Without a's late value 0.7 would pass.
  BOOST_TEST((s->on_result("c", 1, 0.7) == stop));
}

BOOST_AUTO_TEST_CASE(the_percentile_rule_stops_a_nan_unlike_ray) {
  auto s = percentile(2, 2, 8);
  BOOST_TEST((s->on_result("a", 1, not_a_number) == stop));
}

BOOST_AUTO_TEST_CASE(nan_percentile_equals_numpy_to_the_bit) {
  BOOST_TEST(nan_percentile({1, 2, 3, 4}, 50) == 2.5);
  BOOST_TEST(nan_percentile({0.1, 0.7, 0.2}, 50) == 0.2);
  BOOST_TEST(nan_percentile({0.3, 0.1, not_a_number, 0.2, 0.7}, (1 - 1.0 / 3) * 100) == 0.3);
  BOOST_TEST(nan_percentile({0.1, 0.2}, (1 - 1.0 / 3) * 100) == 0.16666666666666669);
  BOOST_TEST(nan_percentile({3.3, 1.1, 2.2, 9.9, 0.7, 5.5}, 75) == 4.95);
  // numpy lerps from the upper neighbour here: a + (b - a) / 2 = 0.46499999999999997.
  BOOST_TEST(nan_percentile({0.9, 0.03}, 50) == 0.465);
  BOOST_TEST(nan_percentile({2.0}, 75) == 2.0);
  BOOST_TEST(std::isnan(nan_percentile({not_a_number}, 50)));
  BOOST_TEST(std::isnan(nan_percentile({}, 50)));
}

// ---- Median

BOOST_AUTO_TEST_CASE(the_median_rule_waits_for_the_warmup_epochs) {
  auto s = median(2, 1);
  complete(*s, "a", {5, 5, 5});
  BOOST_TEST((s->on_result("b", 1, 1.0) == go_on));
  BOOST_TEST((s->on_result("b", 2, 1.0) == stop));
}

BOOST_AUTO_TEST_CASE(the_median_rule_waits_for_min_completed_trials) {
  auto s = median(0, 2);
  complete(*s, "a", {5});
  BOOST_TEST((s->on_result("b", 1, 1.0) == go_on));
  s->on_end("b", trial_end::completed);
  BOOST_TEST((s->on_result("c", 1, 2.9) == stop));  // median(5, 1) = 3
  BOOST_TEST((s->on_result("d", 1, 3.0) == go_on));
  // min_completed 0 still needs one completed trial (as Optuna).
  auto z = median(0, 0);
  BOOST_TEST((z->on_result("a", 1, not_a_number) == go_on));
}

BOOST_AUTO_TEST_CASE(stopped_and_failed_trials_do_not_count_as_completed) {
  auto s = median(0, 2);
  complete(*s, "a", {5});
  BOOST_TEST((s->on_result("b", 1, 9.0) == go_on));
  s->on_end("b", trial_end::failed);
  BOOST_TEST((s->on_result("c", 1, 9.0) == go_on));
  s->on_end("c", trial_end::stopped);
  BOOST_TEST((s->on_result("d", 1, 1.0) == go_on));
}

BOOST_AUTO_TEST_CASE(the_median_rule_compares_the_best_so_far_with_the_median_at_the_same_epoch) {
  // The notes' §2.3 curves, as Optuna decides them.
  auto s = median(0, 2);
  complete(*s, "a", {1, 2, 3});
  complete(*s, "b", {3, 3, 3});
  BOOST_TEST((s->on_result("c", 1, 5.0) == go_on));
  BOOST_TEST((s->on_result("c", 2, 0.0) == go_on));  // best 5 vs median 2.5
  BOOST_TEST((s->on_result("c", 3, 0.0) == go_on));  // best 5 vs median 3
  s->on_end("c", trial_end::completed);
  BOOST_TEST((s->on_result("d", 1, 0.0) == stop));   // 0 vs median(1, 3, 5) = 3
  // Epochs no completed trial reported are not judged.
  BOOST_TEST((s->on_result("e", 1, 3.0) == go_on));
  BOOST_TEST((s->on_result("e", 7, -9.0) == go_on));
}

BOOST_AUTO_TEST_CASE(the_median_rule_mirrors_for_minimisation_and_stops_all_nan_trials) {
  auto s = median(0, 1, mode::min);
  complete(*s, "a", {1.0, 0.5});
  BOOST_TEST((s->on_result("b", 1, 1.0) == go_on));   // ties go on
  BOOST_TEST((s->on_result("b", 2, 0.6) == stop));    // best 0.6 > 0.5
  BOOST_TEST((s->on_result("c", 1, not_a_number) == stop));
  BOOST_TEST((s->on_result("d", 1, 0.4) == go_on));
  BOOST_TEST((s->on_result("d", 2, not_a_number) == go_on));   // best so far 0.4 <= 0.5
}

// ---- Construction

BOOST_AUTO_TEST_CASE(bad_options_are_errors_that_name_the_field) {
  asha_options o;
  o.grace_period = 0;
  BOOST_TEST(names(make_asha(o).error(), "grace_period"));
  o = {};
  o.reduction_factor = 1;
  BOOST_TEST(names(make_asha(o).error(), "reduction_factor"));
  o = {};
  o.max_t = -1;
  BOOST_TEST(names(make_asha(o).error(), "max_t"));
  o = {};
  o.grace_period = 5;
  o.max_t = 3;
  BOOST_TEST(names(make_asha(o).error(), "grace_period"));
  median_options m;
  m.warmup_epochs = -1;
  BOOST_TEST(names(make_median(m).error(), "warmup_epochs"));
  m = {};
  m.min_completed = -1;
  BOOST_TEST(names(make_median(m).error(), "min_completed"));
}

BOOST_AUTO_TEST_CASE(make_scheduler_takes_direction_and_max_epochs_from_the_sweep) {
  sweep_config c;
  c.scheduler = "asha";
  c.direction = mode::min;
  c.max_epochs = 20;
  c.asha.direction = mode::max;  // overridden by the sweep's
  auto s = make_scheduler(c);
  BOOST_REQUIRE(s.is_ok());
  BOOST_TEST((*s)->describe().find("rungs at epochs 1, 4, 16;") != std::string::npos, (*s)->describe());
  BOOST_TEST(((*s)->on_result("a", 1, 1.0) == go_on));
  BOOST_TEST(((*s)->on_result("b", 1, 2.0) == stop));  // worse when minimising

  c.scheduler = "median";
  c.median.min_completed = 1;
  s = make_scheduler(c);
  BOOST_REQUIRE(s.is_ok());
  complete(**s, "a", {1.0});
  BOOST_TEST(((*s)->on_result("b", 1, 2.0) == stop));

  c.scheduler = "fifo";
  s = make_scheduler(c);
  BOOST_REQUIRE(s.is_ok());
  BOOST_TEST(((*s)->on_result("a", 1, not_a_number) == go_on));

  c.scheduler = "bohb";
  BOOST_TEST(names(make_scheduler(c).error(), "scheduler"));
}

BOOST_AUTO_TEST_CASE(describe_names_the_rule_and_the_rungs) {
  BOOST_TEST(asha(2, 3, 6)->describe() ==
             "ASHA (top-k rule, as Optuna and Determined): rungs at epochs 2, 6; reduction factor 3; "
             "a trial is kept at a rung while it is within the best max(n/3, 1) of the n trials "
             "there so far");
  BOOST_TEST(percentile(1, 4, 16)->describe().find("percentile rule, as Ray") != std::string::npos);
  BOOST_TEST(asha(1, 4, 0)->describe().find("1, 4, 16, 64, ... (no max_t)") != std::string::npos);
  BOOST_TEST(median(2, 3)->describe().find("median") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
