// dtrain's optimizers against values printed by torch.optim itself
// (tools/reference/torch_optim_reference.py, Debian's python3-torch 1.13):
// five parameters, three steps with fixed gradients.
#include <boost/test/unit_test.hpp>

#include "dtrain/optim/optimizer.hpp"
#include "support/test_util.hpp"

using namespace dtrain;

namespace {

const std::vector<float> p0{0.5f, -1.25f, 2.0f, 0.0f, -0.75f};
const std::vector<std::vector<float>> grads{{0.1f, -0.2f, 0.3f, -0.4f, 0.5f},
                                            {-0.3f, 0.25f, 0.05f, 0.6f, -0.1f},
                                            {0.2f, 0.2f, -0.5f, 0.1f, 0.0f}};

std::vector<float> run(optim::optimizer& opt, float lr) {
  auto p = dtrain::tensor::from_vector(p0, {5});
  for (auto& g : grads) {
    auto gt = dtrain::tensor::from_vector(g, {5});
    BOOST_REQUIRE(opt.step(p, gt, lr).is_ok());
  }
  BOOST_TEST(opt.steps() == 3);
  return p.to_vector();
}

void check_against_torch(const std::vector<float>& got, const std::vector<float>& torch) {
  BOOST_TEST(dtrain::testing::max_relative_error(got, torch) < 2e-6);
}

} // namespace

BOOST_AUTO_TEST_SUITE(optimizers)

BOOST_AUTO_TEST_CASE(plain_sgd_matches_torch) {
  auto opt = optim::sgd::create({}).value();
  check_against_torch(run(*opt, 0.1f),
                      {0.50000006f, -1.27499998f, 2.0150001f, -0.0299999993f, -0.790000021f});
  BOOST_TEST(opt->state_buffers().empty());
}

BOOST_AUTO_TEST_CASE(sgd_with_momentum_dampening_and_weight_decay_matches_torch) {
  auto opt = optim::sgd::create({0.9f, 0.1f, 0.01f, false}).value();
  check_against_torch(run(*opt, 0.1f),
                      {0.50355202f, -1.24995339f, 1.94462514f, -0.00328817102f, -0.864250302f});
  BOOST_TEST(opt->state_buffers().size() == 1u);
}

BOOST_AUTO_TEST_CASE(nesterov_sgd_with_weight_decay_matches_torch) {
  auto opt = optim::sgd::create({0.9f, 0.0f, 0.05f, true}).value();
  check_against_torch(run(*opt, 0.1f),
                      {0.48893261f, -1.23767245f, 1.90011346f, -0.0450097434f, -0.86254096f});
}

BOOST_AUTO_TEST_CASE(adam_with_l2_weight_decay_matches_torch) {
  auto opt = optim::adam::create({0.9f, 0.999f, 1e-8f, 0.1f, false}).value();
  check_against_torch(run(*opt, 0.01f),
                      {0.49054271f, -1.23512709f, 1.97739017f, 0.00472996943f, -0.764843643f});
  BOOST_TEST(opt->name() == "adam");
  BOOST_TEST(opt->state_buffers().size() == 2u);
}

BOOST_AUTO_TEST_CASE(adamw_matches_torch) {
  auto opt = optim::adam::create({0.9f, 0.999f, 1e-8f, 0.1f, true}).value();
  check_against_torch(run(*opt, 0.01f),
                      {0.493270606f, -1.24235225f, 1.97851539f, 0.00473085884f, -0.766787648f});
  BOOST_TEST(opt->name() == "adamw");
}

BOOST_AUTO_TEST_CASE(invalid_hyperparameters_are_refused_by_name) {
  auto nesterov = optim::sgd::create({0.0f, 0.0f, 0.0f, true});
  BOOST_REQUIRE(!nesterov.is_ok());
  BOOST_TEST(nesterov.error().message().find("sgd.nesterov") != std::string::npos);
  auto momentum = optim::sgd::create({-0.5f, 0.0f, 0.0f, false});
  BOOST_TEST(momentum.error().message().find("sgd.momentum") != std::string::npos);
  BOOST_TEST(!optim::adam::create({1.0f, 0.999f, 1e-8f, 0.0f, false}).is_ok());
  BOOST_TEST(!optim::adam::create({0.9f, 0.999f, 0.0f, 0.0f, false}).is_ok());
}

BOOST_AUTO_TEST_CASE(step_refuses_mismatched_or_resized_buffers) {
  auto opt = optim::sgd::create({0.9f, 0.0f, 0.0f, false}).value();
  auto p = dtrain::tensor::zeros({4}), g = dtrain::tensor::zeros({3});
  BOOST_TEST(!opt->step(p, g, 0.1f).is_ok());
  auto g4 = dtrain::tensor::zeros({4});
  BOOST_TEST(opt->step(p, g4, 0.1f).is_ok());
  auto p5 = dtrain::tensor::zeros({5}), g5 = dtrain::tensor::zeros({5});
  auto changed = opt->step(p5, g5, 0.1f);
  BOOST_TEST(!changed.is_ok());
  BOOST_TEST(changed.message().find("changed size") != std::string::npos);
  BOOST_TEST(!opt->step(p, g4, -1.0f).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
