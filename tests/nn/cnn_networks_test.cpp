// Convolutional networks end to end on the CPU: the builder and make_cnn,
// gradients through a whole model, a short training run, and the refusal
// of a CUDA model where there is no device.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "dtrain/cuda/runtime.hpp"
#include "dtrain/nn/build.hpp"
#include "dtrain/nn/cnn.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/factory.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

BOOST_AUTO_TEST_SUITE(cnn_networks)

BOOST_AUTO_TEST_CASE(make_cnn_builds_the_fashion_mnist_network_with_its_shapes) {
  auto net = nn::make_cnn({});
  BOOST_REQUIRE(net.is_ok());
  auto m = nn::model::create(std::move(*net), {784, device::cpu(), 1});
  BOOST_REQUIRE_MESSAGE(m.is_ok(), (m ? std::string() : m.error().to_string()));
  const auto& layers = (*m)->layers();
  BOOST_TEST(layers.layer_count() == 9u);  // (conv relu pool) x 2, linear relu linear
  BOOST_TEST(layers.layer(0).describe() == "conv2d(1x28x28->32, k5, p2)");
  BOOST_TEST(layers.layer(2).describe() == "max_pool2d(32x28x28, k2)");
  BOOST_TEST(layers.layer(5).describe() == "max_pool2d(64x14x14, k2)");
  BOOST_TEST(layers.layer(6).describe() == "linear(3136->128)");
  BOOST_TEST((*m)->output_features() == 10);
  const int64_t expected = (32 * 25 + 32) + (64 * 32 * 25 + 64) + (3136 * 128 + 128) +
                           (128 * 10 + 10);
  BOOST_TEST((*m)->parameter_count() == expected);
  BOOST_TEST((*m)->slots()[0].name == "0.weight");
  BOOST_TEST((((*m)->slots()[0].shape) == shape_t{32, 1, 5, 5}));
}

BOOST_AUTO_TEST_CASE(the_builder_names_the_first_layer_that_does_not_fit) {
  auto too_small = nn::cnn_builder({1, 8, 8}).max_pool2d(2).max_pool2d(2).max_pool2d(2)
                       .max_pool2d(2).linear(3).build();
  BOOST_REQUIRE(!too_small);
  BOOST_TEST(too_small.error().code() == error_code::invalid_argument);
  BOOST_TEST(too_small.error().message().find("cnn layer 4 max_pool2d(1x1x1") !=
             std::string::npos);
  auto after_linear = nn::cnn_builder({1, 8, 8}).linear(16).conv2d(2, 3).build();
  BOOST_REQUIRE(!after_linear);
  BOOST_TEST(after_linear.error().message().find("no longer an image") != std::string::npos);
  nn::cnn_builder b({3, 9, 9});
  b.conv2d(4, 3, 2).global_avg_pool();
  BOOST_TEST(b.features() == 4);
  BOOST_TEST(b.shape().to_string() == "4x1x1");
  BOOST_TEST(b.build().is_ok());
  BOOST_TEST(!b.build().is_ok());  // built once only
}

BOOST_AUTO_TEST_CASE(a_cnn_model_on_cuda_without_a_device_fails_as_a_linear_one_does) {
  auto cnn = nn::model::create(nn::make_cnn({}).value(), {784, device::cuda(0), 1});
  if (dtrain::cuda::available()) {
    BOOST_TEST(cnn.is_ok(), cnn.error().to_string());
    return;
  }
  // No device (or no CUDA in this build): the allocation says so, the same
  // refusal for every kind of layer.
  BOOST_REQUIRE(!cnn);
  BOOST_TEST(cnn.error().code() == error_code::unavailable);
  nn::mlp_spec spec;
  auto mlp = nn::model::create(nn::make_mlp(spec), {784, device::cuda(0), 1});
  BOOST_REQUIRE(!mlp);
  BOOST_TEST(mlp.error().code() == cnn.error().code());
  using namespace nn::build;
  auto norms = nn::model::create(seq(linear(4, 4), layer_norm(4), batch_norm1d(4)),
                                 {4, device::cuda(0), 1});
  BOOST_REQUIRE(!norms);
  BOOST_TEST(norms.error().code() == cnn.error().code());
  auto lookup = nn::model::create(seq(embedding(5, 2)), {1, device::cuda(0), 1});
  BOOST_REQUIRE(!lookup);
  BOOST_TEST(lookup.error().code() == cnn.error().code());
}

BOOST_AUTO_TEST_CASE(model_gradients_through_convs_and_pools_match_finite_differences) {
  nn::cnn_builder b({2, 7, 6});
  b.conv2d(3, nn::conv2d_options::square(3, 1, 1, 1, 1)).activation(ops::activation::tanh)
      .avg_pool2d(2).conv2d(4, 2).activation(ops::activation::tanh).global_avg_pool()
      .linear(3);
  auto m = nn::model::create(b.build().value(), {84, device::cpu(), 3}).value();
  auto x = random_tensor({2, 84}, 40);
  auto labels = tensor::from_vector({2, 0}, {2});
  nn::cross_entropy_loss ce;
  ce.compute(*m->forward(x, true).value(), labels, true).value();
  BOOST_TEST(m->backward(ce.grad(), false).is_ok());
  auto analytic = m->gradients().to_vector();
  auto loss = [&] {
    return static_cast<double>(ce.compute(*m->forward(x, false).value(), labels, false).value());
  };
  tensor params = m->parameters();
  const float eps = 1e-2f;
  int bad = 0;
  for (int64_t i = 0; i < params.numel(); ++i) {
    float saved = params.data()[i];
    params.data()[i] = saved + eps;
    double plus = loss();
    params.data()[i] = saved - eps;
    double minus = loss();
    params.data()[i] = saved;
    double numeric = (plus - minus) / (2.0 * eps);
    if (!(std::abs(numeric - analytic[i]) <= 2e-3 + 2e-2 * std::abs(analytic[i])) && bad++ < 5)
      BOOST_TEST_MESSAGE("parameter " << i << ": numeric " << numeric << ", analytic "
                                      << analytic[i]);
  }
  BOOST_TEST(bad == 0);
}

BOOST_AUTO_TEST_CASE(a_small_cnn_learns_where_a_bright_pixel_is) {
  // Class = the quadrant of the one bright pixel in a noisy 8x8 image: the
  // loss must fall well below chance (log 4) in a few hundred steps.
  nn::cnn_spec spec;
  spec.input = {1, 8, 8};
  spec.conv = {4};
  spec.kernel = 3;
  spec.hidden = {16};
  spec.outputs = 4;
  auto m = nn::model::create(nn::make_cnn(spec).value(), {64, device::cpu(), 7}).value();
  auto opt = optim::make_optimizer({"adam", 1e-2f}).value();
  nn::cross_entropy_loss ce;
  rng gen(11);
  const int64_t batch = 32;
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    auto x = random_tensor({batch, 64}, 1000 + step, 0.1f);
    std::vector<float> labels;
    for (int64_t n = 0; n < batch; ++n) {
      auto r = static_cast<int64_t>(gen.uniform(0.0f, 8.0f)) % 8;
      auto q = static_cast<int64_t>(gen.uniform(0.0f, 8.0f)) % 8;
      x.data()[n * 64 + r * 8 + q] += 3.0f;
      labels.push_back(static_cast<float>((r / 4) * 2 + q / 4));
    }
    auto y = tensor::from_vector(labels, {batch});
    float l = ce.compute(*m->forward(x, true).value(), y, true).value();
    BOOST_REQUIRE(m->backward(ce.grad(), false).is_ok());
    BOOST_REQUIRE(opt->step(m->parameters(), m->gradients(), 1e-2f).is_ok());
    (step == 0 ? first : last) = l;
  }
  BOOST_TEST_MESSAGE("loss " << first << " -> " << last);
  BOOST_TEST(first > 1.0f);
  BOOST_TEST(last < 0.3f);
}

BOOST_AUTO_TEST_SUITE_END()
