// Schedules against the rates torch.optim.lr_scheduler printed for the same
// settings (tools/reference/torch_optim_reference.py), base rate 0.1.
#include <boost/test/unit_test.hpp>

#include "dtrain/optim/lr_schedule.hpp"

using namespace dtrain;

namespace {

void check(const optim::lr_schedule& s, const std::vector<float>& torch) {
  for (size_t t = 0; t < torch.size(); ++t)
    BOOST_TEST(std::abs(s.lr(static_cast<int64_t>(t)) - torch[t]) <= 1e-6f * (1 + torch[t]),
               "t=" << t << ": " << s.lr(static_cast<int64_t>(t)) << " vs " << torch[t]);
}

} // namespace

BOOST_AUTO_TEST_SUITE(lr_schedules)

BOOST_AUTO_TEST_CASE(step_schedule_matches_torch_step_lr) {
  check(*optim::step_lr(0.1f, 3, 0.5f).value(),
        {0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.05f, 0.025f, 0.025f, 0.025f, 0.0125f});
}

BOOST_AUTO_TEST_CASE(multistep_schedule_matches_torch_multistep_lr) {
  check(*optim::multistep_lr(0.1f, {3, 6}, 0.1f).value(),
        {0.1f, 0.1f, 0.1f, 0.01f, 0.01f, 0.01f, 0.001f, 0.001f, 0.001f, 0.001f});
}

BOOST_AUTO_TEST_CASE(cosine_schedule_matches_torch_cosine_annealing_up_to_t_max) {
  auto s = optim::cosine_lr(0.1f, 8, 0.001f).value();
  check(*s, {0.1f, 0.0962320369f, 0.0855017857f, 0.0694428299f, 0.0505f, 0.0315571701f,
             0.0154982143f, 0.00476796314f, 0.001f});
  BOOST_TEST(s->lr(20) == 0.001f);  // stays at the minimum (no restarts)
}

BOOST_AUTO_TEST_CASE(linear_warmup_matches_torch_linear_lr) {
  auto s = optim::linear_warmup(optim::constant_lr(0.1f), 4, 0.25f).value();
  check(*s, {0.025f, 0.04375f, 0.0625f, 0.08125f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f});
}

BOOST_AUTO_TEST_CASE(warmup_composes_with_a_decay) {
  auto s = optim::linear_warmup(optim::multistep_lr(1.0f, {4}, 0.5f).value(), 2, 0.0f).value();
  BOOST_TEST(s->lr(0) == 0.0f);
  BOOST_TEST(s->lr(1) == 0.5f);
  BOOST_TEST(s->lr(3) == 1.0f);
  BOOST_TEST(s->lr(4) == 0.5f);
}

BOOST_AUTO_TEST_CASE(invalid_schedules_are_refused) {
  BOOST_TEST(!optim::step_lr(0.1f, 0, 0.5f).is_ok());
  BOOST_TEST(!optim::multistep_lr(0.1f, {6, 3}, 0.1f).is_ok());
  BOOST_TEST(!optim::cosine_lr(0.1f, 0, 0.0f).is_ok());
  BOOST_TEST(!optim::linear_warmup(optim::constant_lr(0.1f), 3, 2.0f).is_ok());
  BOOST_TEST(!optim::step_lr(-1.0f, 2, 0.5f).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
