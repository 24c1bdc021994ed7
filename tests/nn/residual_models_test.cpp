// Residual blocks: gradients, the flat-buffer layout of nested layers, the
// gradient-ready hook, training a residual MLP, and the norm and embedding
// layers in a model on CUDA.
#include <boost/test/unit_test.hpp>

#include <utility>
#include <vector>

#include "dtrain/nn/build.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "support/finite_difference.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::nn::build;
using dtrain::testing::check_module_gradients;
using dtrain::testing::random_tensor;

namespace {

std::unique_ptr<nn::sequential> residual_mlp() {
  return seq(linear(4, 6), residual(seq(linear(6, 6), tanh(), linear(6, 6))), layer_norm(6),
             residual(seq(batch_norm1d(6), linear(6, 6))), linear(6, 3));
}

} // namespace

BOOST_AUTO_TEST_SUITE(residual_models)

BOOST_AUTO_TEST_CASE(residual_block_gradients_match_finite_differences_for_batch_1_and_odd_sizes) {
  for (int64_t batch : {1, 3}) {
    nn::residual_block block(seq(linear(5, 7), tanh(), linear(7, 5), layer_norm(5)));
    BOOST_TEST(check_module_gradients(block, random_tensor({batch, 5}, 10 + batch), 20, true,
                                      true, true) == 0);
  }
  auto net = residual_mlp();
  BOOST_TEST(check_module_gradients(*net, random_tensor({5, 4}, 30), 31, true, true, true) == 0);
}

BOOST_AUTO_TEST_CASE(residual_block_adds_its_input_to_its_layers_output) {
  nn::residual_block block(seq(linear(3, 3)));
  std::vector<tensor> params{tensor::empty({3, 3}), tensor::empty({3})}, grads{
      tensor::zeros({3, 3}), tensor::zeros({3})};
  rng gen(1);
  block.initialize(params, gen);
  block.bind(params, grads);
  auto x = random_tensor({2, 3}, 40);
  auto y = block.forward(x, {true, 0}).to_vector();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 0; j < 3; ++j) {
      double expect = x.data()[r * 3 + j] + params[1].data()[j];
      for (int64_t k = 0; k < 3; ++k)
        expect += x.data()[r * 3 + k] * params[0].data()[k * 3 + j];
      BOOST_TEST(y[r * 3 + j] == expect, boost::test_tools::tolerance(1e-5));
    }
}

BOOST_AUTO_TEST_CASE(a_residual_block_that_changes_the_width_is_refused_naming_the_block) {
  auto m = nn::model::create(seq(linear(4, 6), residual(seq(linear(6, 5)))), {4});
  BOOST_REQUIRE(!m.is_ok());
  BOOST_TEST((m.error().code() == error_code::shape_mismatch));
  const std::string& msg = m.error().message();
  BOOST_TEST(msg.find("layer 2 residual(sequential(linear(6->5)))") != std::string::npos, msg);
  BOOST_TEST(msg.find("6 features into 5") != std::string::npos, msg);
  auto inner = nn::model::create(seq(residual(seq(linear(6, 6), linear(5, 6)))), {6});
  BOOST_REQUIRE(!inner.is_ok());
  BOOST_TEST(inner.error().message().find("linear(5->6) does not fit") != std::string::npos,
             inner.error().message());
}

BOOST_AUTO_TEST_CASE(nested_parameters_and_buffers_lie_in_the_flat_buffers_under_inner_names) {
  auto m = nn::model::create(residual_mlp(), {4}).value();
  BOOST_TEST(m->layers().layer_count() == 5u);  // blocks are not flattened
  std::vector<std::string> names;
  int64_t next = 0;
  for (auto& slot : m->slots()) {
    names.push_back(slot.name);
    BOOST_TEST(slot.offset == next);  // contiguous, in layer order
    next += slot.count;
  }
  BOOST_TEST(next == m->parameter_count());
  std::vector<std::string> expect{"0.weight", "0.bias", "1.inner.0.weight", "1.inner.0.bias",
                                  "1.inner.2.weight", "1.inner.2.bias", "2.weight", "2.bias",
                                  "3.inner.0.weight", "3.inner.0.bias", "3.inner.1.weight",
                                  "3.inner.1.bias", "4.weight", "4.bias"};
  BOOST_TEST(names == expect, boost::test_tools::per_element());
  BOOST_REQUIRE(m->buffer_slots().size() == 2u);
  BOOST_TEST(m->buffer_slots()[0].name == "3.inner.0.running_mean");
  BOOST_TEST(m->buffer_slots()[1].name == "3.inner.0.running_var");
  BOOST_TEST(m->buffer_count() == 12);
}

BOOST_AUTO_TEST_CASE(the_gradient_ready_hook_reports_each_block_once_after_its_backward) {
  auto m = nn::model::create(residual_mlp(), {4}).value();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  m->set_gradient_ready_hook([&](int64_t offset, int64_t count) {
    ranges.emplace_back(offset, count);
  });
  auto x = random_tensor({4, 4}, 50);  // the layers keep it for backward
  m->forward(x, true).value();
  BOOST_REQUIRE(m->backward(random_tensor({4, 3}, 51), false).is_ok());
  BOOST_REQUIRE(ranges.size() == 5u);
  // Last layer first, each range ending where the one before it begins.
  int64_t end = m->parameter_count();
  for (auto [offset, count] : ranges) {
    BOOST_TEST(offset + count == end);
    end = offset;
  }
  BOOST_TEST(end == 0);
  BOOST_TEST(ranges[1].second == 6 * 2 + 6 * 6 + 6);  // block 3: batch norm and linear
}

BOOST_AUTO_TEST_CASE(a_residual_mlp_trained_a_few_steps_on_synthetic_data_lowers_its_loss) {
  auto net = seq(linear(8, 16), relu(), residual(seq(linear(16, 16), relu(), linear(16, 16))),
                 layer_norm(16), residual(seq(batch_norm1d(16), linear(16, 16), gelu())),
                 linear(16, 3));
  auto m = nn::model::create(std::move(net), {8, device::cpu(), 5}).value();
  // Labels from a fixed linear rule of the inputs: learnable.
  auto x = random_tensor({32, 8}, 60);
  std::vector<float> label_values;
  for (int64_t r = 0; r < 32; ++r) {
    double score = x.data()[r * 8] - x.data()[r * 8 + 3];
    label_values.push_back(score > 0.5 ? 2.0f : score < -0.5 ? 0.0f : 1.0f);
  }
  auto labels = tensor::from_vector(label_values, {32});
  nn::cross_entropy_loss ce;
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    last = ce.compute(*m->forward(x, true).value(), labels, true).value();
    if (step == 0)
      first = last;
    BOOST_REQUIRE(m->backward(ce.grad(), false).is_ok());
    ops::axpy(-0.1f, m->gradients(), m->parameters());
  }
  BOOST_TEST_MESSAGE("loss " << first << " -> " << last);
  BOOST_TEST(last < 0.5f * first);
  BOOST_TEST(m->forward(x, false).is_ok());
}

BOOST_AUTO_TEST_CASE(norm_and_embedding_layers_run_on_cuda_and_a_bad_index_is_out_of_range) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  struct layer_case { std::unique_ptr<nn::sequential> net; int64_t in; };
  std::vector<layer_case> cases;
  cases.push_back({seq(linear(4, 4), layer_norm(4)), 4});
  cases.push_back({seq(linear(4, 4), batch_norm1d(4)), 4});
  cases.push_back({seq(embedding(5, 2), linear(2, 2)), 1});
  cases.push_back({seq(residual(seq(linear(4, 4), layer_norm(4)))), 4});
  for (auto& c : cases) {
    auto m = nn::model::create(std::move(c.net), {c.in, device::cuda()}).value();
    auto x = tensor::from_vector({0, 1, 2, 3, 4, 3, 2, 1}, {8 / c.in, c.in}, device::cuda());
    auto out = m->forward(x, true);
    BOOST_REQUIRE_MESSAGE(out.is_ok(), out.error().to_string());
    BOOST_TEST(m->backward(tensor::zeros({8 / c.in, m->output_features()}, device::cuda()))
                   .is_ok());
  }
  auto m = nn::model::create(seq(embedding(5, 2)), {1, device::cuda()}).value();
  auto out = m->forward(tensor::from_vector({1, 7}, {2, 1}, device::cuda()), true);
  BOOST_REQUIRE(!out.is_ok());
  BOOST_TEST((out.error().code() == error_code::out_of_range));
  BOOST_TEST(out.error().message().find("index 7 at row 1, position 0") != std::string::npos,
             out.error().message());
}

BOOST_AUTO_TEST_SUITE_END()
