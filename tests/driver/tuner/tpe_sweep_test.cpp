// A TPE sweep through the tuner on an embedded cluster, each trial a real
// trainer group of the "objective" operator: every trial reports Branin's
// value at its configuration, and the tuner feeds the searcher exactly
// what a direct loop over the same values would (same trials, same order).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/train/objective.hpp"
#include "dtrain/tune/tpe.hpp"

using namespace dtrain;
using namespace dtrain::actors;

namespace {

tune::space branin_space() {
  tune::space s;
  s.add("x1", tune::uniform(-5, 10)).add("x2", tune::uniform(0, 15));
  return s;
}

double number(const tune::value& v) { return std::get<double>(v); }

// The configurations the searcher suggests when each trial's value is
// Branin's, as a float (the trainer's loss), one trial at a time.
std::vector<tune::config> direct(int64_t trials, uint64_t seed) {
  tune::tpe_options o;
  o.metric = "validation_loss";
  o.direction = tune::mode::min;
  o.num_samples = trials;
  o.startup_trials = 5;
  o.seed = seed;
  auto s = tune::make_tpe(branin_space(), o);
  std::vector<tune::config> out;
  for (int64_t i = 0; i < trials; ++i) {
    const std::string id = "t" + std::to_string(i);
    out.push_back(s->suggest(id).configuration);
    const float y = static_cast<float>(train::branin(number(out.back().at("x1")),
                                                     number(out.back().at("x2"))));
    s->on_result(tune::report{id, 1, {{"validation_loss", y}}});
    s->on_end(id, tune::trial_end::completed);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tpe_sweep)

BOOST_AUTO_TEST_CASE(trials_report_branin_and_follow_the_searchers_own_sequence) {
  cluster::options o;
  o.local_slots = 1;
  auto c = cluster::connect(o);
  BOOST_TEST_REQUIRE(c.is_ok(), c.error().to_string());
  trainer_config t;
  t.operator_name = "objective";
  t.config = {{"function", "branin"}};
  t.num_replicas = 1;
  t.global_batch_size = 1;
  tune_config tc;
  tc.experiment = "tpe";
  tc.metric = "validation_loss";
  tc.direction = tune::mode::min;
  tc.searcher = "tpe";
  tc.tpe_startup_trials = 5;
  tc.num_samples = 12;
  tc.max_epochs = 2;
  tc.max_concurrent_trials = 1;
  tc.seed = 4;
  tc.verbosity = 0;
  tuner sweep(**c, t, branin_space(), tc);
  auto grid = sweep.fit();
  BOOST_TEST_REQUIRE(grid.is_ok(), grid.error().to_string());
  BOOST_TEST_REQUIRE(grid->trials.size() == 12u);
  const auto expected = direct(12, 4);
  for (size_t i = 0; i < grid->trials.size(); ++i) {
    const auto& trial = grid->trials[i];
    BOOST_TEST((trial.status == tune::trial_status::terminated));
    BOOST_TEST(trial.epochs() == 2);
    const double x1 = number(trial.configuration.at("x1"));
    const double x2 = number(trial.configuration.at("x2"));
    BOOST_TEST(trial.last("validation_loss") == train::branin(x1, x2),
               boost::test_tools::tolerance(1e-6));
    BOOST_TEST((trial.configuration == expected[i]), "trial " << i);
  }
}

BOOST_AUTO_TEST_SUITE_END()
