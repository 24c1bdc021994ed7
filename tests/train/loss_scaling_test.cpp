// fp16 training with dynamic loss scaling: the scaler's rules (GradScaler's),
// a step whose gradient overflows is skipped with the parameters untouched,
// fp16 (emulated on the CPU) trains an MLP about as well as float32, two
// replicas where only one overflows still skip together and stay identical,
// and the scaler survives a checkpoint.
#include <boost/test/unit_test.hpp>

#include <array>
#include <atomic>
#include <cmath>
#include <limits>

#include "support/collective_check.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/train/loss_scaler.hpp"
#include "dtrain/train/supervised.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

train::loss_scaler fp16_scaler(float init, int64_t growth_interval) {
  train::loss_scaler_options o;
  o.init_scale = init;
  o.growth_interval = growth_interval;
  return train::loss_scaler(o, true);
}

// A 6-8-3 MLP computing in `p`, a random batch of 16 and plain SGD.
struct tiny_setup {
  std::unique_ptr<nn::model> model;
  nn::cross_entropy_loss loss;
  std::unique_ptr<optim::sgd> opt = optim::sgd::create({}).value();
  data::batch batch;

  explicit tiny_setup(precision p) {
    nn::model_options mo{6, device::cpu(), 3};
    mo.compute = p;
    model = nn::model::create(nn::make_mlp({6, {8}, 3, ops::activation::relu, 0.0f}), mo).value();
    batch.features = random_tensor({16, 6}, 5);
    std::vector<float> labels(16);
    for (size_t i = 0; i < labels.size(); ++i)
      labels[i] = static_cast<float>(i % 3);
    batch.targets = tensor::from_vector(labels, {16});
  }

  status step(train::loss_scaler* scaler) {
    train::loop_options lo;
    lo.scaler = scaler;
    train::epoch_totals totals;
    return train::train_step(*model, loss, *opt, batch, 0.1f, lo, totals);
  }
};

} // namespace

// The file's suite; CTest runs each suite inside it on its own (loss_scaling/NAME).
BOOST_AUTO_TEST_SUITE(loss_scaling)

BOOST_AUTO_TEST_SUITE(scaler)

BOOST_AUTO_TEST_CASE(the_defaults_are_gradscalers) {
  train::loss_scaler_options o;
  BOOST_TEST(o.init_scale == 65536.0f);
  BOOST_TEST(o.growth_factor == 2.0f);
  BOOST_TEST(o.backoff_factor == 0.5f);
  BOOST_TEST(o.growth_interval == 2000);
  BOOST_TEST(train::loss_scaler(o, true).scale() == 65536.0f);
  BOOST_TEST(train::loss_scaler(o, false).scale() == 1.0f);
}

BOOST_AUTO_TEST_CASE(a_non_finite_gradient_skips_halves_the_scale_and_restarts_the_count) {
  auto s = fp16_scaler(1024.0f, 3);
  tensor g = tensor::full({4}, 512.0f);
  BOOST_TEST(s.unscale_or_skip(g));
  BOOST_TEST(g.to_vector()[0] == 0.5f);  // divided by the scale
  BOOST_TEST(s.growth_tracker() == 1);
  tensor bad = tensor::from_vector({1.0f, INFINITY, 2.0f, 3.0f}, {4});
  BOOST_TEST(!s.unscale_or_skip(bad));
  BOOST_TEST(s.scale() == 512.0f);
  BOOST_TEST(s.growth_tracker() == 0);
  BOOST_TEST(s.skipped_steps() == 1);
  tensor nan = tensor::from_vector({std::numeric_limits<float>::quiet_NaN()}, {1});
  BOOST_TEST(!s.unscale_or_skip(nan));
  BOOST_TEST(s.scale() == 256.0f);
  BOOST_TEST(s.skipped_steps() == 2);
}

BOOST_AUTO_TEST_CASE(the_scale_grows_after_growth_interval_finite_steps) {
  auto s = fp16_scaler(8.0f, 3);
  for (int i = 0; i < 2; ++i)
    s.update(true);
  BOOST_TEST(s.scale() == 8.0f);
  s.update(true);
  BOOST_TEST(s.scale() == 16.0f);
  BOOST_TEST(s.growth_tracker() == 0);
  s.update(true);
  s.update(true);
  s.update(false);  // the count starts over
  for (int i = 0; i < 2; ++i)
    s.update(true);
  BOOST_TEST(s.scale() == 8.0f);
  s.update(true);
  BOOST_TEST(s.scale() == 16.0f);
}

BOOST_AUTO_TEST_CASE(a_disabled_scaler_never_skips_nor_touches_the_gradient) {
  train::loss_scaler s(train::loss_scaler_options{}, false);
  tensor bad = tensor::from_vector({INFINITY, 2.0f}, {2});
  BOOST_TEST(s.unscale_or_skip(bad));
  BOOST_TEST(bad.to_vector()[1] == 2.0f);
  BOOST_TEST(s.skipped_steps() == 0);
}

BOOST_AUTO_TEST_CASE(a_restored_state_is_checked) {
  auto s = fp16_scaler(8.0f, 3);
  BOOST_TEST(s.restore({1024.0, 2, 5}).is_ok());
  BOOST_TEST(s.scale() == 1024.0f);
  BOOST_TEST(s.growth_tracker() == 2);
  BOOST_TEST(s.skipped_steps() == 5);
  BOOST_TEST(!s.restore({0.0, 0, 0}).is_ok());
  BOOST_TEST(!s.restore({INFINITY, 0, 0}).is_ok());
  BOOST_TEST(!s.restore({2.0, -1, 0}).is_ok());
}

BOOST_AUTO_TEST_CASE(an_overflowing_fp16_gradient_skips_the_step_and_keeps_the_parameters) {
  tiny_setup t(precision::fp16);
  // 2^40 times the loss's gradient is far past half's 65504: the backward
  // GEMMs read it as infinity.
  auto s = fp16_scaler(0x1p40f, 2000);
  const tensor before = t.model->parameters().clone();
  BOOST_TEST_REQUIRE(t.step(&s).is_ok());
  BOOST_TEST(t.model->parameters().bitwise_equal(before));
  BOOST_TEST(s.scale() == 0x1p39f);
  BOOST_TEST(s.skipped_steps() == 1);
  // At a sane scale the same step is taken.
  auto sane = fp16_scaler(1024.0f, 2000);
  BOOST_TEST_REQUIRE(t.step(&sane).is_ok());
  BOOST_TEST(!t.model->parameters().bitwise_equal(before));
  BOOST_TEST(sane.skipped_steps() == 0);
  BOOST_TEST(sane.scale() == 1024.0f);
}

BOOST_AUTO_TEST_CASE(a_scaled_fp16_step_matches_an_unscaled_one_closely) {
  // Scaling by a power of two and back is exact in float32; the difference
  // is only fp16's rounding of the scaled gradient, so the updates agree to
  // about half's precision.
  tiny_setup scaled(precision::fp16), plain(precision::fp32);
  const tensor before = plain.model->parameters().clone();
  auto s = fp16_scaler(4096.0f, 2000);
  BOOST_TEST_REQUIRE(scaled.step(&s).is_ok());
  BOOST_TEST_REQUIRE(plain.step(nullptr).is_ok());
  auto a = scaled.model->parameters().to_vector(), b = plain.model->parameters().to_vector();
  auto p0 = before.to_vector();
  double worst = 0, largest = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::fmax(worst, std::fabs(double(a[i]) - b[i]));
    largest = std::fmax(largest, std::fabs(double(b[i]) - p0[i]));
  }
  BOOST_TEST(largest > 0.0);
  BOOST_TEST(worst <= 0.01 * largest, "update differs by " << worst << " of " << largest);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// linear_regression, but on rank 1 (only) the gradient of its third batch
// of every epoch is made infinite after backward: an overflow that one
// replica alone meets, as a real one would be. The step holds its sync,
// since it writes gradients() after backward().
class overflow_on_rank_1 final : public train::training_operator {
public:
  status setup(const train::hyperparameters& config, train::replica_context& ctx,
               train::operator_parts& parts) override {
    DTRAIN_ASSIGN_OR_RETURN(inner_, train::make_operator("linear_regression"));
    rank_ = ctx.rank();
    return inner_->setup(config, ctx, parts);
  }
  result<train::step_result> train_step(train::step_context& ctx) override {
    if (ctx.epoch != epoch_) {
      epoch_ = ctx.epoch;
      batch_ = 0;
    }
    DTRAIN_RETURN_IF_ERROR(ctx.hold_gradient_sync());
    DTRAIN_ASSIGN_OR_RETURN(auto r, train::standard_train_step(ctx));
    if (rank_ == 1 && ++batch_ == 3) {
      tensor host = ctx.model.gradients().to(device::cpu());
      host.data()[0] = INFINITY;
      ctx.model.gradients().copy_from(host);
    }
    return r;
  }

private:
  std::unique_ptr<train::training_operator> inner_;
  int rank_ = 0;
  int64_t epoch_ = 0, batch_ = 0;
};

train::replica_options fp16_regression(const std::string& op) {
  train::register_operator("fp16_overflow_on_rank_1",
                           [] { return std::make_unique<overflow_on_rank_1>(); });
  auto o = options_for(op, {{"samples", "2048"}, {"features", "8"}, {"planted", "true"}}, 64);
  o.compute = precision::fp16;
  o.loss_scaling.init_scale = 1024.0f;
  o.loss_scaling.growth_interval = 10;
  return o;
}

status expect_same_everywhere(runner_t& r, const train::bytes& mine, const std::string& what) {
  DTRAIN_ASSIGN_OR_RETURN(auto all, r.context().all_gather(mine));
  for (size_t q = 1; q < all.size(); ++q)
    DTRAIN_RETURN_IF_ERROR(
        expect(all[q] == all[0], "replica " + std::to_string(q) + "'s " + what + " differs"));
  return status::ok();
}

train::bytes scaler_bytes(const train::loss_scaler& s) {
  const auto st = s.saved();
  return bytes_of(std::to_string(st.scale) + "/" + std::to_string(st.growth_tracker) + "/" +
                  std::to_string(st.skipped_steps));
}

} // namespace

BOOST_AUTO_TEST_SUITE(fp16_replicas)

BOOST_AUTO_TEST_CASE(fp16_trains_an_mlp_close_to_float32s_loss) {
  auto loss_of = [](precision p) {
    double loss = 0;
    auto o = small_mlp(256);
    o.compute = p;
    run_group(1, rank_mode::threads, o, [&](int, runner_t& r) -> status {
      DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
      DTRAIN_ASSIGN_OR_RETURN(m, r.train_epoch());
      loss = m.loss;
      if (p == precision::fp16) {
        DTRAIN_RETURN_IF_ERROR(expect(m.extra.count("loss_scale") == 1 &&
                                          m.extra.count("skipped_steps") == 1,
                                      "fp16 reports no loss_scale or skipped_steps"));
        DTRAIN_RETURN_IF_ERROR(expect(m.extra.at("loss_scale") == r.scaler().scale(),
                                      "loss_scale is not the scaler's"));
      } else {
        DTRAIN_RETURN_IF_ERROR(
            expect(m.extra.count("loss_scale") == 0, "fp32 reports a loss scale"));
      }
      return status::ok();
    });
    return loss;
  };
  const double fp32 = loss_of(precision::fp32);
  const double fp16 = loss_of(precision::fp16);
  const double bf16 = loss_of(precision::bf16);
  BOOST_TEST_MESSAGE("epoch 2 training loss: fp32 " << fp32 << ", fp16 " << fp16 << ", bf16 "
                                                    << bf16);
  BOOST_TEST(fp32 > 0.0);
  BOOST_TEST(std::fabs(fp16 - fp32) <= 0.03 * fp32, "fp16 " << fp16 << " vs fp32 " << fp32);
  BOOST_TEST(std::fabs(bf16 - fp32) <= 0.05 * fp32, "bf16 " << bf16 << " vs fp32 " << fp32);
  BOOST_TEST(fp16 != fp32, "fp16 computed exactly as fp32: no rounding happened");
}

BOOST_AUTO_TEST_CASE(an_overflow_on_one_replica_skips_the_step_on_both_and_keeps_them_identical) {
  auto o = fp16_regression("fp16_overflow_on_rank_1");
  run_group(2, rank_mode::threads, o, [&](int, runner_t& r) -> status {
    const train::bytes initial = bytes_of(r.parameters());
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    DTRAIN_RETURN_IF_ERROR(expect_same_everywhere(r, bytes_of(r.parameters()), "parameters"));
    DTRAIN_RETURN_IF_ERROR(expect_same_everywhere(r, scaler_bytes(r.scaler()), "loss scaler"));
    DTRAIN_RETURN_IF_ERROR(expect(bytes_of(r.parameters()) != initial, "nothing was trained"));
    DTRAIN_RETURN_IF_ERROR(expect(m.extra.at("skipped_steps") == 1.0,
                                  "skipped " + std::to_string(m.extra.at("skipped_steps")) +
                                      " steps, expected the one overflow"));
    // 2048 samples in batches of 64: 32 syncs. Two finite steps, the
    // overflow halves 1024 to 512 and restarts the count, then 29 finite
    // steps grow it twice (every 10).
    DTRAIN_RETURN_IF_ERROR(expect(m.steps == 31, "steps " + std::to_string(m.steps)));
    DTRAIN_RETURN_IF_ERROR(expect(r.scaler().scale() == 2048.0f && m.extra.at("loss_scale") == 2048.0,
                                  "scale " + std::to_string(r.scaler().scale())));
    return expect(r.scaler().growth_tracker() == 9,
                  "growth tracker " + std::to_string(r.scaler().growth_tracker()));
  });
}

BOOST_AUTO_TEST_CASE(the_loss_scaler_round_trips_through_a_checkpoint) {
  temp_dir root;
  auto o = fp16_regression("fp16_overflow_on_rank_1");
  train::loss_scaler::state saved;
  run_group(2, rank_mode::threads, o, [&](int rank, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    DTRAIN_RETURN_IF_ERROR(r.save(root.path(), {}, 1, ""));
    if (rank == 0)
      saved = r.scaler().saved();
    return status::ok();
  });
  BOOST_TEST_REQUIRE(saved.skipped_steps == 1);
  run_group(2, rank_mode::threads, o, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    const auto got = r.scaler().saved();
    return expect(got.scale == saved.scale && got.growth_tracker == saved.growth_tracker &&
                      got.skipped_steps == saved.skipped_steps,
                  "restored scale " + std::to_string(got.scale) + ", tracker " +
                      std::to_string(got.growth_tracker) + ", skipped " +
                      std::to_string(got.skipped_steps));
  });
  // A float32 group takes the same checkpoint and has no scaler to restore.
  auto fp32 = o;
  fp32.compute = precision::fp32;
  run_group(1, rank_mode::threads, fp32, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.restore(root.path()));
    return expect(!r.scaler().enabled() && r.scaler().scale() == 1.0f, "fp32 has a scaler");
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // loss_scaling
