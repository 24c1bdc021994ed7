// PBT: the hand-computed cases of the tuning notes (§7.5: quantile sizes,
// explore moves), when a trial may perturb, who exploits whom, and what an
// exploit carries over.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "dtrain/tune/pbt.hpp"
#include "dtrain/tune/sweep.hpp"

using namespace dtrain::tune;
using dtrain::error_code;
using dtrain::rng;

namespace {

constexpr auto go_on = decision::go_on;
constexpr auto exploit = decision::exploit;
const double not_a_number = std::numeric_limits<double>::quiet_NaN();

space test_space() {
  space s;
  s.add("lr", loguniform(1e-4, 1.0));
  s.add("batch", choice({int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}}));
  s.add("hidden", randint(1, 1000));
  s.add("optimizer", constant(std::string("adam")));
  return s;
}

config test_config(double lr = 0.01) {
  return {{"lr", lr}, {"batch", int64_t{32}}, {"hidden", int64_t{64}},
          {"optimizer", std::string("adam")}};
}

std::unique_ptr<scheduler> pbt(pbt_options o = {}, const space& s = test_space()) {
  return std::move(make_pbt(s, o).value());
}

std::string name(size_t i) { return "t" + std::to_string(i); }

// n trials, added and checkpointed, report score i (trial i) at epoch 1
// and again at epoch 2: at epoch 2 every trial is ranked. Returns which
// trials exploited at epoch 2, and checks that each copies one of the
// best as many.
std::vector<size_t> exploiters_at_epoch_two(size_t n) {
  auto s = pbt();
  for (size_t i = 0; i < n; ++i) {
    s->on_add(name(i), test_config());
    s->on_checkpoint(name(i), 1);
  }
  for (size_t i = 0; i < n; ++i)
    if (s->on_result(name(n - 1 - i), 1, double(n - 1 - i)) == exploit)  // best first
      s->on_exploit_failed(name(n - 1 - i));
  std::vector<size_t> out, sources;
  for (size_t i = 0; i < n; ++i) {
    if (s->on_result(name(i), 2, double(i)) != exploit)
      continue;
    out.push_back(i);
    sources.push_back(std::stoul(s->exploit(name(i)).source.substr(1)));
    s->on_exploit_failed(name(i));
  }
  for (size_t source : sources)
    BOOST_TEST(source >= n - out.size(), "n " << n << ": source t" << source);
  return out;
}

// A configuration as one line, for comparing runs.
std::string text(const config& c) {
  std::string out;
  for (const auto& [key, v] : to_strings(c))
    out += key + "=" + v + " ";
  return out;
}

bool names(const dtrain::status& s, const std::string& field) {
  return s.code() == error_code::invalid_argument && s.message().find(field) != std::string::npos;
}

// What explore gives `field` = `v` over many seeds (resampling off unless
// asked).
std::set<value> explored(const std::string& field, value v, const space& s = test_space(),
                         double resample_probability = 0) {
  std::set<value> out;
  config c = test_config();
  c[field] = v;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    rng r(seed);
    out.insert(pbt_explore(s, c, {field}, resample_probability, r).at(field));
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pbt_scheduler)

BOOST_AUTO_TEST_CASE(quantile_sizes_are_rays_ceil_capped_at_half) {
  // §7.5: 8 scores -> 2, 5 -> 2, 3 -> 1, 2 -> 1, 1 -> none.
  BOOST_TEST(exploiters_at_epoch_two(8) == (std::vector<size_t>{0, 1}));
  BOOST_TEST(exploiters_at_epoch_two(5) == (std::vector<size_t>{0, 1}));
  BOOST_TEST(exploiters_at_epoch_two(3) == (std::vector<size_t>{0}));
  BOOST_TEST(exploiters_at_epoch_two(2) == (std::vector<size_t>{0}));
  BOOST_TEST(exploiters_at_epoch_two(1).empty());
}

BOOST_AUTO_TEST_CASE(the_lowest_quantile_exploits_a_top_quantile_trial) {
  auto s = pbt();
  for (size_t i = 0; i < 8; ++i) {
    s->on_add(name(i), test_config(0.001 * double(i + 1)));
    s->on_checkpoint(name(i), 1);
    BOOST_TEST((s->on_result(name(i), 1, double(10 + i)) == go_on || i < 2));
    s->on_exploit_failed(name(i));
  }
  std::set<std::string> sources;
  for (uint64_t round = 0; round < 20; ++round) {
    const int64_t epoch = 2 + int64_t(round);
    for (size_t i = 0; i < 8; ++i) {
      const decision d = s->on_result(name(i), epoch, double(10 + i));
      BOOST_TEST(((d == exploit) == (i < 2)), "trial " << i << " epoch " << epoch);
      if (d != exploit)
        continue;
      const exploit_plan plan = s->exploit(name(i));
      BOOST_TEST((plan.source == "t6" || plan.source == "t7"), plan.source);
      sources.insert(plan.source);
      // The source's configuration, explored: lr x0.8 or x1.2 or resampled.
      BOOST_TEST((plan.configuration.at("optimizer") == value{std::string("adam")}));
      s->on_exploit_failed(name(i));
    }
  }
  BOOST_TEST(sources.size() == 2u);  // a uniform choice among the top 2
}

BOOST_AUTO_TEST_CASE(list_values_move_to_a_neighbour_clamped_at_the_ends) {
  space s;
  s.add("x", choice({int64_t{1}, int64_t{10}, int64_t{100}, int64_t{1000}, int64_t{10000}}));
  BOOST_TEST((explored("x", int64_t{100}, s) == std::set<value>{int64_t{10}, int64_t{1000}}));
  BOOST_TEST((explored("x", int64_t{1}, s) == std::set<value>{int64_t{1}, int64_t{10}}));
  BOOST_TEST((explored("x", int64_t{10000}, s) == std::set<value>{int64_t{1000}, int64_t{10000}}));
}

BOOST_AUTO_TEST_CASE(a_value_not_in_the_list_is_resampled) {
  space s;
  s.add("x", choice({int64_t{1}, int64_t{10}, int64_t{100}, int64_t{1000}, int64_t{10000}}));
  const auto got = explored("x", int64_t{55}, s);
  BOOST_TEST(got.size() >= 4u);
  for (const value& v : got)
    BOOST_TEST((v != value{int64_t{55}}));
  // A value of another type is not in the list either.
  BOOST_TEST((!explored("x", 100.0, s).count(value{100.0})));
}

BOOST_AUTO_TEST_CASE(a_float_is_multiplied_by_one_point_two_or_zero_point_eight) {
  space s;
  s.add("x", uniform(0, 10));
  BOOST_TEST((explored("x", 1.0, s) == std::set<value>{1.0 * 0.8, 1.0 * 1.2}));
  // Clamped to the domain's bounds.
  BOOST_TEST((explored("x", 9.0, s) == std::set<value>{9.0 * 0.8, 10.0}));
  s.add("x", loguniform(1e-4, 1e-2));
  BOOST_TEST((explored("x", 1e-4, s) == std::set<value>{1e-4, 1e-4 * 1.2}));
}

BOOST_AUTO_TEST_CASE(an_integer_is_multiplied_and_truncated) {
  // §7.5: 64 -> int(76.8) = 76 or int(51.2) = 51.
  BOOST_TEST((explored("hidden", int64_t{64}) == std::set<value>{int64_t{76}, int64_t{51}}));
  BOOST_TEST((explored("hidden", int64_t{1}) == std::set<value>{int64_t{1}}));  // 1.2 -> 1, 0.8 -> 0 -> 1
  BOOST_TEST((explored("hidden", int64_t{900}) == std::set<value>{int64_t{720}, int64_t{1000}}));
}

BOOST_AUTO_TEST_CASE(resampling_draws_from_the_domain) {
  const auto lists = explored("batch", int64_t{32}, test_space(), 1.0);
  BOOST_TEST(lists.size() == 4u);
  const auto numbers = explored("lr", 0.01, test_space(), 1.0);
  BOOST_TEST(numbers.size() > 50u);
  for (const value& v : numbers)
    BOOST_TEST((std::get<double>(v) >= 1e-4 && std::get<double>(v) <= 1.0));
  // Roughly a quarter resampled by default (64 seeds: not one of the two moves).
  size_t resampled = 0;
  for (const value& v : explored("lr", 0.5, test_space(), 0.25))
    resampled += v != value{0.5 * 0.8} && v != value{0.5 * 1.2};
  BOOST_TEST((resampled > 4 && resampled < 40), resampled);
}

BOOST_AUTO_TEST_CASE(explore_changes_only_the_mutable_hyperparameters) {
  rng r(3);
  const config source = test_config(0.5);
  const config out = pbt_explore(test_space(), source, {"lr"}, 0, r);
  BOOST_TEST((out.at("batch") == source.at("batch")));
  BOOST_TEST((out.at("hidden") == source.at("hidden")));
  BOOST_TEST((out.at("optimizer") == source.at("optimizer")));
  BOOST_TEST((out.at("lr") != source.at("lr")));
  // Constants never change, even when named.
  BOOST_TEST((pbt_explore(test_space(), source, {"optimizer"}, 1.0, r) == source));
}

BOOST_AUTO_TEST_CASE(the_interval_and_the_burn_in_are_respected) {
  pbt_options o;
  o.perturbation_interval = 3;
  o.burn_in = 4;
  auto s = pbt(o);
  s->on_add("good", test_config());
  s->on_add("bad", test_config());
  s->on_checkpoint("good", 1);
  std::vector<int64_t> exploited_at;
  for (int64_t epoch = 1; epoch <= 12; ++epoch) {
    BOOST_TEST((s->on_result("good", epoch, 0.9) == go_on));
    if (s->on_result("bad", epoch, 0.1) == exploit) {
      exploited_at.push_back(epoch);
      s->on_exploit_failed("bad");
    }
  }
  // First at the burn-in, then every 3 epochs after the last perturbation.
  BOOST_TEST(exploited_at == (std::vector<int64_t>{4, 7, 10}));
}

BOOST_AUTO_TEST_CASE(a_trial_without_a_checkpoint_is_never_a_source) {
  auto s = pbt();
  s->on_add("good", test_config());
  s->on_add("bad", test_config());
  for (int64_t epoch = 1; epoch <= 3; ++epoch) {
    BOOST_TEST((s->on_result("good", epoch, 0.9) == go_on));
    BOOST_TEST((s->on_result("bad", epoch, 0.1) == go_on));
  }
  s->on_checkpoint("good", 4);
  BOOST_TEST((s->on_result("good", 4, 0.9) == go_on));
  BOOST_TEST((s->on_result("bad", 4, 0.1) == exploit));
  BOOST_TEST(s->exploit("bad").source == "good");
}

BOOST_AUTO_TEST_CASE(an_exploit_plan_lasts_until_the_tuner_answers) {
  auto s = pbt();
  s->on_add("good", test_config(0.5));
  s->on_add("bad", test_config());
  s->on_checkpoint("good", 1);
  s->on_result("good", 1, 0.9);
  BOOST_REQUIRE((s->on_result("bad", 1, 0.1) == exploit));
  const exploit_plan plan = s->exploit("bad");
  BOOST_TEST(plan.source == "good");
  BOOST_TEST((s->exploit("bad").configuration == plan.configuration));  // asked twice, same
  const double lr = std::get<double>(plan.configuration.at("lr"));
  BOOST_TEST((lr == 0.5 * 0.8 || lr == 0.5 * 1.2 || (lr >= 1e-4 && lr <= 1.0)));
  s->on_exploit_failed("bad");
  BOOST_TEST(s->exploit("bad").source.empty());
  BOOST_TEST(s->exploit("nobody").source.empty());
}

BOOST_AUTO_TEST_CASE(the_perturbation_epoch_is_inherited_after_an_exploit) {
  pbt_options o;
  o.perturbation_interval = 2;
  auto s = pbt(o);
  s->on_add("good", test_config());
  s->on_add("bad", test_config());
  for (int64_t epoch = 1; epoch <= 6; ++epoch) {  // perturbs at 2, 4, 6
    s->on_checkpoint("good", epoch);
    BOOST_TEST((s->on_result("good", epoch, 0.9) == go_on));
  }
  BOOST_TEST((s->on_result("bad", 1, 0.1) == go_on));
  BOOST_REQUIRE((s->on_result("bad", 2, 0.1) == exploit));
  const exploit_plan plan = s->exploit("bad");
  s->on_exploited("bad", plan);
  // It continues from good's epoch 6 checkpoint with good's last
  // perturbation (6): epoch 7 is too early, epoch 8 perturbs.
  BOOST_TEST((s->on_result("bad", 7, 0.0) == go_on));
  BOOST_TEST((s->on_result("bad", 8, 0.0) == exploit));
}

BOOST_AUTO_TEST_CASE(an_exploited_trial_is_a_source_with_its_new_configuration) {
  auto s = pbt();
  s->on_add("a", test_config(0.5));
  s->on_add("b", test_config());
  s->on_checkpoint("a", 1);
  s->on_result("a", 1, 0.9);
  BOOST_REQUIRE((s->on_result("b", 1, 0.1) == exploit));
  const exploit_plan plan = s->exploit("b");
  s->on_exploited("b", plan);
  // Now b is best and a worst: a copies b, whose configuration is the plan's.
  BOOST_TEST((s->on_result("b", 2, 0.95) == go_on));
  BOOST_REQUIRE((s->on_result("a", 2, 0.2) == exploit));
  BOOST_TEST(s->exploit("a").source == "b");
}

BOOST_AUTO_TEST_CASE(nan_ranks_worst) {
  for (mode direction : {mode::max, mode::min}) {
    pbt_options o;
    o.direction = direction;
    auto s = pbt(o);
    for (const char* t : {"a", "b", "c"}) {
      s->on_add(t, test_config());
      s->on_checkpoint(t, 1);
    }
    s->on_result("a", 1, 0.5);
    s->on_result("c", 1, direction == mode::max ? 0.9 : 0.1);
    s->on_result("b", 1, not_a_number);
    s->on_exploit_failed("b");
    BOOST_TEST((s->on_result("a", 2, 0.5) == go_on));
    BOOST_TEST((s->on_result("b", 2, not_a_number) == exploit));
    BOOST_TEST(s->exploit("b").source == "c");
  }
}

BOOST_AUTO_TEST_CASE(ended_trials_leave_the_ranking) {
  auto s = pbt();
  for (const char* t : {"a", "b", "c"}) {
    s->on_add(t, test_config());
    s->on_checkpoint(t, 1);
  }
  s->on_result("c", 1, 0.9);
  s->on_result("b", 1, 0.5);
  s->on_end("c", trial_end::completed);
  BOOST_REQUIRE((s->on_result("a", 1, 0.1) == exploit));
  BOOST_TEST(s->exploit("a").source == "b");  // c ended: never a source
  s->on_exploit_failed("a");
  s->on_end("b", trial_end::failed);
  BOOST_TEST((s->on_result("a", 2, 0.1) == go_on));  // alone: nobody to copy
}

BOOST_AUTO_TEST_CASE(the_minimize_direction_exploits_the_smallest) {
  pbt_options o;
  o.direction = mode::min;
  auto s = pbt(o);
  s->on_add("small", test_config());
  s->on_add("large", test_config());
  s->on_checkpoint("small", 1);
  s->on_checkpoint("large", 1);
  BOOST_TEST((s->on_result("large", 1, 0.9) == go_on));
  BOOST_TEST((s->on_result("small", 1, 0.1) == go_on));
  BOOST_TEST((s->on_result("large", 2, 0.9) == exploit));
  BOOST_TEST(s->exploit("large").source == "small");
}

BOOST_AUTO_TEST_CASE(decisions_and_plans_are_deterministic_for_a_seed) {
  auto run = [](uint64_t seed) {
    pbt_options o;
    o.seed = seed;
    auto s = pbt(o);
    std::vector<std::string> log;
    for (size_t i = 0; i < 8; ++i) {
      s->on_add(name(i), test_config(0.01 * double(i + 1)));
      s->on_checkpoint(name(i), 1);
    }
    for (int64_t epoch = 1; epoch <= 10; ++epoch)
      for (size_t i = 0; i < 8; ++i) {
        const double v = std::sin(double(epoch * 7 + int64_t(i) * 3));
        if (s->on_result(name(i), epoch, v) != exploit)
          continue;
        const exploit_plan plan = s->exploit(name(i));
        log.push_back(name(i) + "<-" + plan.source + " " + text(plan.configuration));
        s->on_exploited(name(i), plan);
      }
    return log;
  };
  BOOST_TEST(run(7) == run(7));
  BOOST_TEST(!run(7).empty());
  bool differs = false;
  for (uint64_t seed = 8; seed < 16 && !differs; ++seed)
    differs = run(seed) != run(7);
  BOOST_TEST(differs);
}

BOOST_AUTO_TEST_CASE(bad_options_are_errors_that_name_the_field) {
  pbt_options o;
  o.perturbation_interval = 0;
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "perturbation_interval"));
  o = {};
  o.burn_in = -1;
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "burn_in"));
  o = {};
  o.quantile_fraction = 0.6;
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "quantile_fraction"));
  o = {};
  o.resample_probability = not_a_number;
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "resample_probability"));
  o = {};
  o.mutations = {"momentum"};
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "momentum"));
  o.mutations = {"optimizer"};
  BOOST_TEST(names(make_pbt(test_space(), o).error(), "constant"));
  o = {};
  BOOST_TEST(names(make_pbt(space{}, o).error(), "mutations"));
}

BOOST_AUTO_TEST_CASE(make_scheduler_builds_pbt_over_the_space_in_the_sweeps_direction) {
  sweep_config c;
  c.scheduler = "pbt";
  c.direction = mode::min;
  c.pbt.direction = mode::max;  // overridden by the sweep's
  BOOST_TEST(validate(c).is_ok());
  auto s = make_scheduler(c, test_space());
  BOOST_REQUIRE(s.is_ok());
  BOOST_TEST((*s)->describe().find("PBT") != std::string::npos, (*s)->describe());
  (*s)->on_checkpoint("a", 1);
  (*s)->on_result("a", 1, 0.1);
  BOOST_TEST(((*s)->on_result("b", 1, 0.9) == exploit));  // larger is worse
  c.pbt.quantile_fraction = 0.75;
  BOOST_TEST(names(validate(c), "pbt.quantile_fraction"));
  c.pbt = {};
  c.pbt.perturbation_interval = 0;
  BOOST_TEST(names(validate(c), "pbt.perturbation_interval"));
}

BOOST_AUTO_TEST_SUITE_END()
