// End-to-end single-process training on real data: Fashion-MNIST from
// Debian's dataset-fashion-mnist, and the Catalyst tutorial's regression.
#include <boost/test/unit_test.hpp>

#include "dtrain/data/synthetic.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/fashion_mnist.hpp"
#include "support/test_util.hpp"

using namespace dtrain;

BOOST_AUTO_TEST_SUITE(fashion_mnist_training)

// The Fashion-MNIST benchmark table lists "MLP 256-128-100" at 0.8833.
BOOST_AUTO_TEST_CASE(mlp_256_128_100_reaches_088_test_accuracy) {
  train::classifier_run_options options;  // 784-256-128-100-10 ReLU, Adam, cosine, 15 epochs
  options.data_dir = dtrain::testing::fashion_mnist_dir();
  int64_t epochs_seen = 0;
  auto last = train::run_fashion_mnist(options, [&](const train::epoch_report& r) {
    ++epochs_seen;
    BOOST_TEST_MESSAGE("epoch " << r.epoch << " train loss " << r.train.mean_loss()
                                << " test acc " << r.test.accuracy() << " "
                                << r.train.seconds << " s");
  });
  BOOST_REQUIRE_MESSAGE(last.is_ok(), last.error().to_string());
  BOOST_TEST(epochs_seen == options.epochs);
  BOOST_TEST(last->train.samples == 60000);
  BOOST_TEST(last->test.samples == 10000);
  BOOST_TEST(last->test.accuracy() >= 0.88);
}

BOOST_AUTO_TEST_CASE(missing_data_directory_is_reported_by_path) {
  train::classifier_run_options options;
  options.data_dir = "/nonexistent/fashion";
  auto r = train::run_fashion_mnist(options, nullptr);
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("/nonexistent/fashion") != std::string::npos);
}

// Catalyst's tutorial: Linear(10, 1), MSE, Adam, MultiStepLR([3, 6]), batch
// 32, 8 epochs; with planted targets the loss must fall to the noise floor.
BOOST_AUTO_TEST_CASE(catalyst_linear_regression_converges_to_the_noise_floor) {
  data::linear_regression_options lo;
  lo.planted = true;
  lo.noise = 0.05f;
  auto set = data::make_linear_regression(lo).value();
  auto sampler = data::shard_sampler::create({set->size(), 1, 0, true, false, 1}).value();
  data::loader_options opts;
  opts.batch_size = 32;
  auto loader = data::loader::create(set, sampler, opts).value();
  auto net = std::make_unique<nn::sequential>();
  net->add(std::make_unique<nn::linear>(10, 1));
  auto model = nn::model::create(std::move(net), {10}).value();
  optim::optimizer_spec os;
  os.lr = 0.05f;
  auto opt = optim::make_optimizer(os).value();
  optim::schedule_spec ss;
  ss.name = "multistep";
  ss.milestones = {3, 6};
  auto schedule = optim::make_schedule(ss, os.lr, 8).value();
  nn::mse_loss loss;
  double last = 0;
  for (int64_t epoch = 0; epoch < 8; ++epoch) {
    loader->begin_epoch(epoch);
    auto totals = train::train_epoch(*model, loss, *opt, *loader, schedule->lr(epoch),
                                     {false});
    BOOST_REQUIRE(totals.is_ok());
    last = totals->mean_loss();
  }
  BOOST_TEST_MESSAGE("final mse " << last);
  BOOST_TEST(last < 2 * 0.05 * 0.05);  // noise variance 0.0025
}

BOOST_AUTO_TEST_SUITE_END()
