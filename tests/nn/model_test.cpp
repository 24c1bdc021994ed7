#include <boost/test/unit_test.hpp>

#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

std::unique_ptr<nn::model> small_mlp(uint64_t seed) {
  nn::mlp_spec spec{6, {8, 4}, 3, ops::activation::relu, 0.0f};
  return nn::model::create(nn::make_mlp(spec), {6, device::cpu(), seed}).value();
}

// One forward and backward of a fixed batch through `m`.
void forward_backward(nn::model& m, bool accumulate) {
  auto x = random_tensor({5, 6}, 6);
  auto labels = dtrain::tensor::from_vector({0, 1, 2, 1, 0}, {5});
  nn::cross_entropy_loss ce;
  ce.compute(*m.forward(x, true).value(), labels, true).value();
  BOOST_REQUIRE(m.backward(ce.grad(), accumulate).is_ok());
}

} // namespace

BOOST_AUTO_TEST_SUITE(model)

BOOST_AUTO_TEST_CASE(layers_that_do_not_chain_are_refused_naming_the_layer) {
  auto net = std::make_unique<nn::sequential>();
  net->add(std::make_unique<nn::linear>(784, 256));
  net->add(std::make_unique<nn::activation_layer>(ops::activation::relu));
  net->add(std::make_unique<nn::linear>(128, 10));
  auto m = nn::model::create(std::move(net), {784});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST((m.error().code() == error_code::shape_mismatch));
  const std::string& msg = m.error().message();
  BOOST_TEST_MESSAGE(msg);
  BOOST_TEST(msg.find("layer 3 linear(128->10)") != std::string::npos);
  BOOST_TEST(msg.find("layer 2 relu") != std::string::npos);
  BOOST_TEST(msg.find("256") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(wrong_input_width_is_refused_at_the_first_layer) {
  auto m = nn::model::create(nn::make_mlp({}), {100});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST(m.error().message().find("layer 1 linear(784->256)") != std::string::npos);
  BOOST_TEST(m.error().message().find("the model input") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(empty_model_and_bad_dropout_are_refused) {
  BOOST_TEST(!nn::model::create(std::make_unique<nn::sequential>(), {4}).is_ok());
  nn::mlp_spec spec{4, {4}, 2, ops::activation::relu, 1.5f};
  auto m = nn::model::create(nn::make_mlp(spec), {4});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST(m.error().message().find("dropout(1.5)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(parameters_live_in_one_contiguous_buffer_in_layer_order) {
  auto m = small_mlp(1);
  BOOST_TEST(m->parameter_count() == 6 * 8 + 8 + 8 * 4 + 4 + 4 * 3 + 3);
  int64_t expected_offset = 0;
  for (auto& slot : m->slots()) {
    BOOST_TEST(slot.offset == expected_offset);
    expected_offset += slot.count;
  }
  BOOST_TEST(expected_offset == m->parameter_count());
  BOOST_TEST(m->slots().front().name == "0.weight");
  BOOST_TEST(m->gradients().numel() == m->parameter_count());
  // Writing the flat buffer changes what the layers compute: they hold views.
  auto x = random_tensor({2, 6}, 5);
  auto before = m->forward(x, false).value()->to_vector();
  ops::fill(m->parameters(), 0.0f);
  auto after = m->forward(x, false).value()->to_vector();
  BOOST_TEST(before != after);
  for (float v : after)
    BOOST_TEST(v == 0.0f);
}

BOOST_AUTO_TEST_CASE(initialization_is_fixed_by_the_seed) {
  BOOST_TEST(small_mlp(3)->parameters().bitwise_equal(small_mlp(3)->parameters()));
  BOOST_TEST(!small_mlp(3)->parameters().bitwise_equal(small_mlp(4)->parameters()));
}

BOOST_AUTO_TEST_CASE(backward_accumulates_and_zero_grad_clears) {
  auto m = small_mlp(2);
  m->zero_grad();
  forward_backward(*m, true);
  auto once = m->gradients().to_vector();
  forward_backward(*m, true);
  auto twice = m->gradients().to_vector();
  for (size_t i = 0; i < once.size(); ++i)
    BOOST_TEST(std::abs(twice[i] - 2 * once[i]) <= 1e-6f * (1 + std::abs(once[i])));
  m->zero_grad();
  BOOST_TEST(ops::sum(m->gradients()) == 0.0);
}

BOOST_AUTO_TEST_CASE(backward_without_accumulate_overwrites_stale_gradients) {
  auto m = small_mlp(2);
  m->zero_grad();
  forward_backward(*m, true);
  auto clean = m->gradients().to_vector();
  ops::fill(m->gradients(), 123.0f);  // stale values from an earlier step
  forward_backward(*m, false);
  BOOST_TEST(m->gradients().to_vector() == clean);
}

BOOST_AUTO_TEST_CASE(gradient_ready_hook_reports_each_layer_last_first) {
  auto m = small_mlp(2);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  m->set_gradient_ready_hook([&](int64_t off, int64_t n) { ranges.emplace_back(off, n); });
  forward_backward(*m, false);
  BOOST_REQUIRE(ranges.size() == 3u);  // three linear layers; activations have none
  int64_t end = m->parameter_count();
  for (auto [off, n] : ranges) {
    BOOST_TEST(off + n == end);  // contiguous, from the back of the buffer
    end = off;
  }
  BOOST_TEST(end == 0);
}

BOOST_AUTO_TEST_CASE(a_linear_and_the_relu_or_tanh_after_it_fused_compute_what_separate_ops_do) {
  for (auto kind : {ops::activation::relu, ops::activation::tanh}) {
    std::vector<std::unique_ptr<nn::module>> layers;
    layers.push_back(std::make_unique<nn::linear>(6, 5));
    layers.push_back(std::make_unique<nn::activation_layer>(kind));
    auto m = nn::model::create(std::make_unique<nn::sequential>(std::move(layers)),
                               {6, device::cpu(), 3})
                 .value();
    auto* activation = dynamic_cast<const nn::activation_layer*>(&m->layers().layer(1));
    BOOST_REQUIRE(activation != nullptr);
    BOOST_TEST(activation->fused());  // the linear layer applies it
    const tensor x = random_tensor({4, 6}, 8), dy = random_tensor({4, 5}, 9);
    const tensor out = *m->forward(x, true).value();
    BOOST_REQUIRE(m->backward(dy, false).is_ok());
    // The same with one op per step: GEMM, bias, activation; and back.
    tensor w = m->parameters().view(0, {6, 5}), b = m->parameters().view(30, {5});
    tensor y = tensor::empty({4, 5}), act = tensor::empty({4, 5}), dz = tensor::empty({4, 5});
    ops::matmul(x, false, w, false, y);
    ops::add_bias(y, b);
    ops::activation_forward(kind, y, act);
    BOOST_TEST(out.bitwise_equal(act), ops::to_string(kind));
    ops::activation_backward(kind, y, act, dy, dz);
    tensor dw = tensor::empty({6, 5}), db = tensor::empty({5});
    ops::matmul(x, true, dz, false, dw);
    ops::sum_rows(dz, db);
    BOOST_TEST(m->gradients().view(0, {6, 5}).bitwise_equal(dw), ops::to_string(kind));
    BOOST_TEST(m->gradients().view(30, {5}).bitwise_equal(db), ops::to_string(kind));
  }
}

BOOST_AUTO_TEST_CASE(forward_and_backward_refuse_bad_calls) {
  auto m = small_mlp(2);
  auto bad = m->forward(random_tensor({3, 5}, 1), true);
  BOOST_REQUIRE(!bad.is_ok());
  BOOST_TEST(bad.error().message().find("[batch, 6]") != std::string::npos);
  BOOST_TEST(bad.error().message().find("[3, 5]") != std::string::npos);
  BOOST_TEST(!m->backward(random_tensor({3, 3}, 2)).is_ok());  // no forward yet
  BOOST_REQUIRE(m->forward(random_tensor({3, 6}, 1), true).is_ok());
  BOOST_TEST(!m->backward(random_tensor({4, 3}, 2)).is_ok());  // wrong batch
}

BOOST_AUTO_TEST_CASE(sgd_training_fits_a_small_classification_problem) {
  // Two Gaussian blobs per class: an MLP must drive the loss far down.
  auto m = small_mlp(7);
  auto x = random_tensor({60, 6}, 11, 0.3f);
  std::vector<float> labels(60);
  for (int i = 0; i < 60; ++i) {
    labels[i] = static_cast<float>(i % 3);
    x.data()[i * 6 + i % 3] += 2.0f;
  }
  auto y = dtrain::tensor::from_vector(labels, {60});
  auto opt = optim::sgd::create({0.9f, 0.0f, 0.0f, false}).value();
  nn::cross_entropy_loss ce;
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    m->zero_grad();
    last = ce.compute(*m->forward(x, true).value(), y, true).value();
    if (step == 0)
      first = last;
    BOOST_REQUIRE(m->backward(ce.grad()).is_ok());
    BOOST_REQUIRE(opt->step(m->parameters(), m->gradients(), 0.05f).is_ok());
  }
  BOOST_TEST_MESSAGE("loss " << first << " -> " << last);
  BOOST_TEST(last < 0.1f * first);
}

BOOST_AUTO_TEST_SUITE_END()
