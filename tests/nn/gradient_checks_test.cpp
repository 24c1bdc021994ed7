// Finite-difference checks of every layer's and loss's backward on the CPU
// (the method: nn/finite_difference.hpp).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>

#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "support/finite_difference.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

using dtrain::testing::count_mismatches;
using dtrain::testing::weighted_sum;
constexpr float eps = dtrain::testing::fd_eps;

// Checks d/dx and d/dparams of a module bound to freshly initialized parameters.
void check_module(nn::module& m, int64_t batch, int64_t in, uint64_t seed,
                  float input_scale = 1.0f) {
  auto x = random_tensor({batch, in}, seed + 1, input_scale);
  BOOST_TEST(dtrain::testing::check_module_gradients(m, x, seed) == 0);
}

// Keeps inputs away from ReLU's kink, where a central difference is wrong.
dtrain::tensor away_from_zero(dtrain::tensor x) {
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::abs(x.data()[i]) < 4 * eps)
      x.data()[i] = x.data()[i] < 0 ? -0.5f : 0.5f;
  return x;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gradient_checks)

BOOST_AUTO_TEST_CASE(linear_layer_gradients_match_finite_differences) {
  nn::linear layer(7, 5);
  check_module(layer, 4, 7, 100);
}

BOOST_AUTO_TEST_CASE(linear_layer_without_bias_gradients_match_finite_differences) {
  nn::linear layer(3, 6, false);
  check_module(layer, 2, 3, 110);
}

BOOST_AUTO_TEST_CASE(gelu_and_tanh_gradients_match_finite_differences) {
  nn::activation_layer gelu(ops::activation::gelu);
  check_module(gelu, 3, 8, 200, 2.0f);
  nn::activation_layer tanh_layer(ops::activation::tanh);
  check_module(tanh_layer, 3, 8, 210, 2.0f);
}

BOOST_AUTO_TEST_CASE(relu_gradient_matches_finite_differences_away_from_zero) {
  nn::activation_layer relu(ops::activation::relu);
  auto x = away_from_zero(random_tensor({4, 6}, 300));
  auto r = random_tensor({4, 6}, 301);
  nn::forward_context ctx{true, 0};
  relu.forward(x, ctx);
  auto dx = relu.backward(r, {}).to_vector();
  auto loss = [&] { return weighted_sum(relu.forward(x, ctx), r); };
  BOOST_TEST(count_mismatches(x, dx, loss, "relu input") == 0);
}

BOOST_AUTO_TEST_CASE(dropout_gradient_matches_finite_differences_for_a_fixed_mask) {
  nn::dropout drop(0.3f);
  check_module(drop, 5, 6, 400);
}

BOOST_AUTO_TEST_CASE(sequential_mlp_gradients_match_finite_differences) {
  nn::mlp_spec spec{5, {6, 4}, 3, ops::activation::tanh, 0.0f};
  auto net = nn::make_mlp(spec);
  check_module(*net, 3, 5, 500);  // the container forwards to its layers
}

BOOST_AUTO_TEST_CASE(cross_entropy_gradient_matches_finite_differences) {
  nn::cross_entropy_loss ce;
  auto logits = random_tensor({4, 5}, 600, 2.0f);
  auto labels = dtrain::tensor::from_vector({0, 4, 2, 2}, {4});
  ce.compute(logits, labels, true).value();
  auto analytic = ce.grad().to_vector();
  nn::cross_entropy_loss probe;
  auto loss = [&] { return static_cast<double>(probe.compute(logits, labels, false).value()); };
  BOOST_TEST(count_mismatches(logits, analytic, loss, "cross_entropy logits") == 0);
}

BOOST_AUTO_TEST_CASE(mse_gradient_matches_finite_differences) {
  nn::mse_loss mse;
  auto pred = random_tensor({4, 2}, 700), target = random_tensor({4, 2}, 701);
  mse.compute(pred, target, true).value();
  auto analytic = mse.grad().to_vector();
  nn::mse_loss probe;
  auto loss = [&] { return static_cast<double>(probe.compute(pred, target, false).value()); };
  BOOST_TEST(count_mismatches(pred, analytic, loss, "mse predictions") == 0);
}

BOOST_AUTO_TEST_CASE(model_parameter_gradients_through_loss_match_finite_differences) {
  nn::mlp_spec spec{4, {5}, 3, ops::activation::gelu, 0.0f};
  auto m = nn::model::create(nn::make_mlp(spec), {4, device::cpu(), 9}).value();
  auto x = random_tensor({3, 4}, 800);
  auto labels = dtrain::tensor::from_vector({2, 0, 1}, {3});
  nn::cross_entropy_loss ce;
  m->zero_grad();
  ce.compute(*m->forward(x, true).value(), labels, true).value();
  BOOST_TEST(m->backward(ce.grad()).is_ok());
  auto analytic = m->gradients().to_vector();
  auto loss = [&] {
    return static_cast<double>(ce.compute(*m->forward(x, false).value(), labels, false).value());
  };
  BOOST_TEST(count_mismatches(m->parameters(), analytic, loss, "model parameters") == 0);
}

BOOST_AUTO_TEST_SUITE_END()
