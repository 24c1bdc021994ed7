// Operators that override the training and validation steps: a
// hand-written loss trains data-parallel like one replica at the whole
// batch (through backward() with an L2 term added by hand, or with the
// gradient written directly), custom metrics are aggregated as weighted
// means, the default steps reproduce the plain supervised loop bit for bit,
// and a failing step is reported naming the operator.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "support/collective_check.hpp"
#include "support/spawn.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/data/synthetic.hpp"
#include "dtrain/train/supervised.hpp"
#include "support/test_util.hpp"
#include "support/replica_group.hpp"
#include "support/step_operators.hpp"

using namespace dtrain;
using namespace dtrain::testing;

namespace {

// The extra metrics but the replica's memory accounting (memory.*), which
// every epoch reports.
size_t operator_metrics(const std::map<std::string, double>& extra) {
  return static_cast<size_t>(std::count_if(extra.begin(), extra.end(), [](const auto& kv) {
    return kv.first.rfind("memory.", 0) != 0;
  }));
}

train::replica_options hand_loss(bool direct) {
  register_step_operators();
  return options_for("weighted_l2_regression",
                     {{"samples", "2000"}, {"lr", "0.05"}, {"l2", "0.01"},
                      {"direct", direct ? "true" : "false"}},
                     64, 11);
}

struct epoch_outcome {
  std::vector<float> parameters;  // rank 0's after the epoch
  train::epoch_metrics trained;
};

// One epoch of an n-replica group; every replica's parameters and metrics
// must agree bitwise.
epoch_outcome one_epoch(int n, const train::replica_options& o) {
  epoch_outcome out;
  run_group(n, rank_mode::threads, o, [&](int rank, runner_t& r) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto m, r.train_epoch());
    DTRAIN_ASSIGN_OR_RETURN(auto all, r.context().all_gather(bytes_of(r.parameters())));
    for (size_t q = 1; q < all.size(); ++q)
      DTRAIN_RETURN_IF_ERROR(expect(all[q] == all[0], "replica " + std::to_string(q) +
                                                          "'s parameters differ from rank 0's"));
    auto mae = m.extra.find("mae");
    // fp16 adds loss_scale and skipped_steps.
    DTRAIN_RETURN_IF_ERROR(expect(mae != m.extra.end() &&
                                      operator_metrics(m.extra) == (r.scaler().enabled() ? 3u : 1u),
                                  "the training metrics lack mae"));
    train::bytes bits(sizeof(double));
    std::memcpy(bits.data(), &mae->second, sizeof(double));
    DTRAIN_ASSIGN_OR_RETURN(auto maes, r.context().all_gather(bits));
    DTRAIN_RETURN_IF_ERROR(expect(maes.back() == maes.front(), "mae differs across replicas"));
    if (rank == 0)
      out = {r.parameters().to_vector(), m};
    return status::ok();
  });
  return out;
}

// The mean absolute error of the linear model `theta` (weights, then bias)
// over the operator's data set, in double.
double mae_by_hand(const std::vector<float>& theta, int64_t samples, uint64_t seed) {
  data::linear_regression_options lo;
  lo.samples = samples;
  lo.features = 10;
  lo.planted = true;
  lo.seed = seed;
  auto set = data::make_linear_regression(lo).value();
  auto x = set->features().to_vector(), t = set->targets().to_vector();
  double sum = 0;
  for (int64_t i = 0; i < samples; ++i) {
    double y = theta[10];
    for (int64_t j = 0; j < 10; ++j)
      y += static_cast<double>(theta[static_cast<size_t>(j)]) * x[static_cast<size_t>(i * 10 + j)];
    sum += std::abs(y - t[static_cast<size_t>(i)]);
  }
  return sum / static_cast<double>(samples);
}

uint64_t bits_of(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// The error of an epoch (or of validation, with `validating`) of a
// failing_step group of n replicas: every rank must fail alike.
status step_error(int n, const std::string& fail, bool validating) {
  register_step_operators();
  auto o = options_for("failing_step", {{"fail", fail}}, 20);
  std::vector<status> errors(static_cast<size_t>(n));
  group_stores stores(rank_mode::threads);
  auto outcomes = run_ranks(n, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    DTRAIN_ASSIGN_OR_RETURN(auto r, make_runner(rank, n, stores.for_rank(), o));
    errors[static_cast<size_t>(rank)] =
        validating ? r->validate().to_status() : r->train_epoch().to_status();
    return status::ok();
  });
  const std::string failed = failures(outcomes);
  BOOST_TEST(failed.empty(), failed);
  for (const auto& e : errors)
    BOOST_TEST(e.code() == errors.front().code());
  return errors.front();
}

} // namespace

BOOST_AUTO_TEST_SUITE(custom_steps)

BOOST_AUTO_TEST_CASE(a_hand_written_loss_trains_two_replicas_in_lockstep_like_one_at_the_whole_batch) {
  std::map<bool, std::vector<float>> by_path;
  for (bool direct : {false, true}) {
    const auto o = hand_loss(direct);
    epoch_outcome one = one_epoch(1, o), two = one_epoch(2, o);
    BOOST_REQUIRE_EQUAL(one.parameters.size(), 11u);
    BOOST_REQUIRE_EQUAL(two.parameters.size(), 11u);
    BOOST_TEST_MESSAGE((direct ? "direct" : "backward")
                       << ": 1 vs 2 replicas, max relative error "
                       << max_relative_error(two.parameters, one.parameters));
    BOOST_TEST(max_relative_error(two.parameters, one.parameters) < 1e-4);
    BOOST_TEST(one.trained.samples == 2000);
    BOOST_TEST(two.trained.samples == 2000);
    BOOST_TEST(std::abs(two.trained.loss - one.trained.loss) < 1e-4 * one.trained.loss);
    BOOST_TEST(std::abs(two.trained.extra.at("mae") - one.trained.extra.at("mae")) <
               1e-4 * one.trained.extra.at("mae"));
    by_path[direct] = one.parameters;
  }
  // Both ways of writing the gradient compute the same step.
  BOOST_TEST(max_relative_error(by_path[true], by_path[false]) < 1e-4);
  // And it is not the plain MSE's: the weights and the L2 term count.
  auto plain = hand_loss(false);
  plain.config = train::hyperparameters({{"samples", "2000"}, {"lr", "0.05"}, {"l2", "0"}});
  BOOST_TEST(max_relative_error(one_epoch(1, plain).parameters, by_path[false]) > 1e-4);
}

BOOST_AUTO_TEST_CASE(a_hand_written_loss_scaled_by_ctx_loss_scale_trains_in_fp16_like_fp32) {
  for (bool direct : {false, true}) {
    auto fp16 = hand_loss(direct);
    fp16.compute = precision::fp16;
    epoch_outcome half = one_epoch(2, fp16), full = one_epoch(2, hand_loss(direct));
    const double err = max_relative_error(half.parameters, full.parameters);
    BOOST_TEST_MESSAGE((direct ? "direct" : "backward") << ": fp16 vs fp32, max relative error "
                                                        << err << ", loss scale "
                                                        << half.trained.extra.at("loss_scale"));
    // Unscaled, the gradient would be divided by 65536: barely any step.
    BOOST_TEST(err < 2e-2);
    BOOST_TEST(half.trained.extra.at("skipped_steps") == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(a_validation_metric_is_the_mean_over_every_sample_of_the_validation_set) {
  const auto o = hand_loss(false);
  run_group(2, rank_mode::threads, o, [&](int, runner_t& r) -> status {
    DTRAIN_RETURN_IF_ERROR(r.train_epoch().to_status());
    DTRAIN_ASSIGN_OR_RETURN(auto v, r.validate());
    auto mae = v.extra.find("mae");
    DTRAIN_RETURN_IF_ERROR(expect(mae != v.extra.end(), "validate() lacks mae"));
    const double want = mae_by_hand(r.parameters().to_vector(), 2000, o.seed);
    return expect(v.samples == 2000 && std::abs(mae->second - want) < 1e-5 * want,
                  "mae " + std::to_string(mae->second) + ", by hand " + std::to_string(want));
  });
}

// The default steps are the loop of supervised.hpp, which the replica ran
// before steps could be overridden: one replica must match it bit for bit
// (parameters, loss, accuracy), in training and in validation.
BOOST_AUTO_TEST_CASE(the_default_steps_reproduce_the_plain_supervised_loop_bit_for_bit) {
  const auto o = small_mlp(256);
  run_group(1, rank_mode::threads, o, [&](int, runner_t& r) -> status {
    // The reference: the same operator's parts, the same data order.
    DTRAIN_ASSIGN_OR_RETURN(auto op, train::make_operator(o.operator_name));
    train::operator_parts parts;
    DTRAIN_RETURN_IF_ERROR(op->setup(o.config, r.context(), parts));
    DTRAIN_RETURN_IF_ERROR(expect(bytes_of(parts.model->parameters()) == bytes_of(r.parameters()),
                                  "the reference starts elsewhere"));
    data::loader_options lo;
    lo.batch_size = 256;
    DTRAIN_ASSIGN_OR_RETURN(auto order, data::shard_sampler::create(
                                            {parts.train_data->size(), 1, 0, true, false, o.seed}));
    DTRAIN_ASSIGN_OR_RETURN(auto loader, data::loader::create(parts.train_data, order, lo));
    loader->begin_epoch(0);
    DTRAIN_ASSIGN_OR_RETURN(auto want, train::train_epoch(*parts.model, *parts.loss,
                                                          *parts.optimizer, *loader,
                                                          parts.schedule->lr(0), {true}));
    DTRAIN_ASSIGN_OR_RETURN(auto got, r.train_epoch());
    DTRAIN_RETURN_IF_ERROR(expect(bytes_of(parts.model->parameters()) == bytes_of(r.parameters()),
                                  "the parameters differ after an epoch"));
    DTRAIN_RETURN_IF_ERROR(expect(bits_of(got.loss) == bits_of(want.mean_loss()) &&
                                      bits_of(got.accuracy) == bits_of(want.accuracy()) &&
                                      got.samples == want.samples &&
                                      operator_metrics(got.extra) == 0u,
                                  "training: loss " + std::to_string(got.loss) + " vs " +
                                      std::to_string(want.mean_loss()) + ", accuracy " +
                                      std::to_string(got.accuracy) + " vs " +
                                      std::to_string(want.accuracy())));
    DTRAIN_ASSIGN_OR_RETURN(auto all, data::shard_sampler::create(
                                          {parts.validation_data->size(), 1, 0, false, false,
                                           o.seed}));
    DTRAIN_ASSIGN_OR_RETURN(auto vloader, data::loader::create(parts.validation_data, all, lo));
    vloader->begin_epoch(0);
    DTRAIN_ASSIGN_OR_RETURN(auto vwant,
                            train::evaluate(*parts.model, *parts.loss, *vloader, {true}));
    DTRAIN_ASSIGN_OR_RETURN(auto vgot, r.validate());
    return expect(bits_of(vgot.loss) == bits_of(vwant.mean_loss()) &&
                      bits_of(vgot.accuracy) == bits_of(vwant.accuracy()) &&
                      vgot.samples == 10000 && vgot.extra.empty(),
                  "validation: loss " + std::to_string(vgot.loss) + " vs " +
                      std::to_string(vwant.mean_loss()));
  });
}

BOOST_AUTO_TEST_CASE(an_error_from_a_step_names_the_operator_and_the_step) {
  const status train = step_error(2, "train", false);
  BOOST_TEST((train.code() == error_code::invalid_argument));
  BOOST_TEST(train.message().find("operator 'failing_step' train_step") != std::string::npos,
             train.message());
  BOOST_TEST(train.message().find("batch 3 holds nothing to learn") != std::string::npos,
             train.message());

  const status thrown = step_error(2, "throw", false);
  BOOST_TEST((thrown.code() == error_code::internal));
  BOOST_TEST(thrown.message().find("operator 'failing_step' train_step threw: out of patience") !=
                 std::string::npos,
             thrown.message());

  const status validation = step_error(1, "validation", true);
  BOOST_TEST(validation.message().find("operator 'failing_step' validation_step: no validation") !=
                 std::string::npos,
             validation.message());

  const status reserved = step_error(1, "reserved", false);
  BOOST_TEST((reserved.code() == error_code::invalid_argument));
  BOOST_TEST(reserved.message().find("operator 'failing_step'") != std::string::npos,
             reserved.message());
  BOOST_TEST(reserved.message().find("metric 'loss'") != std::string::npos, reserved.message());

  const status late = step_error(2, "late_hold", false);
  BOOST_TEST((late.code() == error_code::invalid_argument));
  BOOST_TEST(late.message().find("hold before the first backward") != std::string::npos,
             late.message());
}

BOOST_AUTO_TEST_SUITE_END()
