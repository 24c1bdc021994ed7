// The "objective" operator through replica groups: validation_loss is the
// function's value (Branin's minimum at a known point), the same for one
// and two replicas, with deterministic noise, a decaying curve, and the
// epoch count carried through a checkpoint; the functions' known minima.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/train/objective.hpp"
#include "dtrain/train/replica.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

// validation_loss after each of `epochs` epochs, on rank 0 of an n-replica
// group (every rank checks that it saw the same).
std::vector<double> validation_losses(int n, const config_map& config, int epochs,
                                      uint64_t seed = 7) {
  std::vector<double> out;
  run_group(n, rank_mode::threads, options_for("objective", config, 4, seed),
            [&](int rank, runner_t& r) -> status {
              std::vector<double> mine;
              for (int e = 0; e < epochs; ++e) {
                DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
                DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
                DTRAIN_RETURN_IF_ERROR(
                    expect(m.loss == v.loss, "loss and validation_loss differ"));
                mine.push_back(v.loss);
              }
              if (rank == 0)
                out = mine;
              return status::ok();
            });
  return out;
}

const config_map branin_minimum = {
    {"function", "branin"}, {"x1", "3.141592653589793"}, {"x2", "2.275"}};

} // namespace

BOOST_AUTO_TEST_SUITE(objective_operator)

BOOST_AUTO_TEST_CASE(validation_loss_is_branins_value_for_one_and_two_replicas) {
  const auto two = validation_losses(2, branin_minimum, 3);
  BOOST_TEST_REQUIRE(two.size() == 3u);
  for (double v : two)
    BOOST_TEST(v == 0.397887, boost::test_tools::tolerance(1e-5));
  BOOST_TEST((validation_losses(1, branin_minimum, 3) == two));
}

BOOST_AUTO_TEST_CASE(noise_is_deterministic_per_seed_and_epoch_and_independent_of_replicas) {
  config_map noisy = branin_minimum;
  noisy["noise"] = "1.0";
  const auto a = validation_losses(2, noisy, 3);
  BOOST_TEST((a == validation_losses(1, noisy, 3)));
  BOOST_TEST((a != validation_losses(1, noisy, 3, /*seed=*/8)));
  BOOST_TEST(a[0] != a[1]);  // fresh noise each epoch
  for (double v : a)
    BOOST_TEST(std::fabs(v - 0.397887) < 5.0);
}

BOOST_AUTO_TEST_CASE(a_curve_decays_towards_its_final_value) {
  const auto c = validation_losses(1, {{"function", "curve"}, {"x1", "0.7"}, {"x2", "1"}}, 4);
  for (int e = 1; e <= 4; ++e)
    BOOST_TEST(c[e - 1] == 0.04 + 2.0 / e, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(the_epoch_count_travels_in_the_checkpoint) {
  temp_dir root;
  const config_map curve = {{"function", "curve"}, {"x1", "0.5"}, {"x2", "0"}};
  run_group(1, rank_mode::threads, options_for("objective", curve, 4),
            [&](int, runner_t& r) -> status {
              for (int e = 0; e < 2; ++e)
                DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
              return r.save(root.path(), {}, 0, "");
            });
  run_group(1, rank_mode::threads, options_for("objective", curve, 4),
            [&](int, runner_t& r) -> status {
              DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
              DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
              DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
              return expect(std::fabs(v.loss - 1.0 / 3) < 1e-6,
                            "epoch 3 after a restore reported " + std::to_string(v.loss));
            });
}

BOOST_AUTO_TEST_CASE(the_functions_have_their_known_minima) {
  using train::branin;
  BOOST_TEST(branin(-M_PI, 12.275) == 0.397887, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(branin(9.42478, 2.475) == 0.397887, boost::test_tools::tolerance(1e-5));
  BOOST_TEST(train::hartmann6({0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}) ==
                 -3.32237,
             boost::test_tools::tolerance(1e-5));
  BOOST_TEST(train::hartmann6({0.5, 0.5, 0.5, 0.5, 0.5, 0.5}) > -3.32237);
  // Rosenbrock and Sphere over the ten keys that are set.
  config_map ten = {{"function", "rosenbrock"}};
  for (int i = 1; i <= 10; ++i)
    ten["x" + std::to_string(i)] = "1";
  auto at_one = train::read_objective(train::hyperparameters(ten), 0);
  BOOST_TEST_REQUIRE(at_one.is_ok());
  BOOST_TEST(train::objective_value(*at_one, 1) == 0.0);
  ten["x10"] = "0";  // one term: 100 (0 - 1)^2
  BOOST_TEST(train::objective_value(*train::read_objective(train::hyperparameters(ten), 0), 1) ==
             100.0);
  ten["function"] = "sphere";
  BOOST_TEST(train::objective_value(*train::read_objective(train::hyperparameters(ten), 0), 1) ==
             9.0);
}

BOOST_AUTO_TEST_CASE(bad_keys_are_refused_by_name) {
  using train::hyperparameters;
  auto unknown = train::read_objective(hyperparameters(config_map{{"function", "ackley"}}), 0);
  BOOST_TEST_REQUIRE(!unknown.is_ok());
  BOOST_TEST(unknown.error().message().find("ackley") != std::string::npos);
  BOOST_TEST(unknown.error().message().find("rosenbrock, sphere") != std::string::npos);
  auto typo = train::read_objective(hyperparameters(config_map{{"x11", "1"}}), 0);
  BOOST_TEST_REQUIRE(!typo.is_ok());
  BOOST_TEST(typo.error().message().find("x11") != std::string::npos);
  BOOST_TEST(!train::read_objective(hyperparameters(config_map{{"noise", "-1"}}), 0).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
