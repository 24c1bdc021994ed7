// LayerNorm and BatchNorm on the CPU: finite-difference gradients (odd
// sizes, batch 1), outputs and running statistics against hand
// computations in double, and errors.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "dtrain/nn/build.hpp"
#include "dtrain/nn/model.hpp"
#include "support/finite_difference.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::check_module_gradients;
using dtrain::testing::random_tensor;

namespace {

// A module bound to fresh host parameters, gradients and buffers.
struct bound {
  std::vector<tensor> params, grads, buffers;

  explicit bound(nn::module& m, uint64_t seed = 1) {
    rng gen(seed);
    for (auto& spec : m.parameter_specs()) {
      params.push_back(tensor::empty(spec.shape));
      grads.push_back(tensor::zeros(spec.shape));
    }
    m.initialize(params, gen);
    m.bind(params, grads);
    for (auto& spec : m.buffer_specs())
      buffers.push_back(tensor::full(spec.shape, spec.initial));
    m.bind_buffers(buffers);
  }
};

// Per channel of x [rows, channels * spatial] (NCHW rows): mean and biased variance.
void channel_statistics(const tensor& x, int64_t channels, int64_t spatial,
                        std::vector<double>& mean, std::vector<double>& var) {
  const int64_t rows = x.size(0);
  const double count = static_cast<double>(rows * spatial);
  mean.assign(channels, 0.0);
  var.assign(channels, 0.0);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial; ++s)
        mean[c] += x.data()[r * channels * spatial + c * spatial + s] / count;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial; ++s) {
        double d = x.data()[r * channels * spatial + c * spatial + s] - mean[c];
        var[c] += d * d / count;
      }
  }
}

// Backward twice with accumulate = true must double every parameter
// gradient; once more with accumulate = false must bring it back.
void check_accumulate(nn::module& m, const tensor& x) {
  bound b(m);
  nn::forward_context ctx{true, 5};
  auto r = random_tensor({x.size(0), m.output_features(x.size(1)).value()}, 77);
  m.forward(x, ctx);
  m.backward(r, {true, false});
  std::vector<std::vector<float>> once;
  for (auto& g : b.grads)
    once.push_back(g.to_vector());
  m.backward(r, {true, true});
  for (size_t p = 0; p < b.grads.size(); ++p)
    for (size_t i = 0; i < once[p].size(); ++i)
      BOOST_TEST(b.grads[p].data()[i] == 2.0f * once[p][i], boost::test_tools::tolerance(1e-5f));
  m.backward(r, {true, false});
  for (size_t p = 0; p < b.grads.size(); ++p)
    BOOST_TEST(b.grads[p].to_vector() == once[p], boost::test_tools::per_element());
}

} // namespace

BOOST_AUTO_TEST_SUITE(normalization_layers)

BOOST_AUTO_TEST_CASE(layer_norm_gradients_match_finite_differences_for_odd_sizes_and_batch_1) {
  for (int64_t batch : {1, 3}) {
    nn::layer_norm ln(7);
    BOOST_TEST(check_module_gradients(ln, random_tensor({batch, 7}, 10 + batch, 1.5f), 20, true,
                                      true, true) == 0);
  }
  nn::layer_norm wide(13);
  BOOST_TEST(check_module_gradients(wide, random_tensor({2, 13}, 30), 31, true, true, true) == 0);
}

BOOST_AUTO_TEST_CASE(layer_norm_normalizes_each_row_then_scales_and_shifts) {
  nn::layer_norm ln(5);
  bound b(ln);
  b.params[0].copy_from(tensor::from_vector({1, 2, 3, 4, 5}, {5}));
  b.params[1].copy_from(tensor::from_vector({0, 0, 1, 0, -1}, {5}));
  auto x = random_tensor({3, 5}, 40, 3.0f);
  const tensor& y = ln.forward(x, {true, 0});
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < 5; ++j)
      mean += x.data()[r * 5 + j] / 5.0;
    for (int64_t j = 0; j < 5; ++j)
      var += std::pow(x.data()[r * 5 + j] - mean, 2) / 5.0;
    for (int64_t j = 0; j < 5; ++j) {
      double expect = (x.data()[r * 5 + j] - mean) / std::sqrt(var + 1e-5) *
                          b.params[0].data()[j] + b.params[1].data()[j];
      BOOST_TEST(y.data()[r * 5 + j] == expect, boost::test_tools::tolerance(1e-4));
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm1d_training_gradients_match_finite_differences) {
  for (int64_t batch : {3, 5}) {
    nn::batch_norm bn(7);
    BOOST_TEST(check_module_gradients(bn, random_tensor({batch, 7}, 50 + batch), 60, true, true,
                                      true) == 0);
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_evaluation_gradients_match_finite_differences_at_batch_1) {
  nn::batch_norm bn(5);
  BOOST_TEST(check_module_gradients(bn, random_tensor({1, 5}, 70), 71, false, true, true) == 0);
  nn::batch_norm bn2d(3, 2, 3);
  BOOST_TEST(check_module_gradients(bn2d, random_tensor({1, 18}, 72), 73, false, true, true) == 0);
}

BOOST_AUTO_TEST_CASE(batch_norm2d_training_gradients_match_finite_differences_at_batch_1_and_2) {
  for (int64_t batch : {1, 2}) {
    nn::batch_norm bn(3, 3, 1);
    BOOST_TEST(check_module_gradients(bn, random_tensor({batch, 9}, 80 + batch), 90, true, true,
                                      true) == 0);
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_running_statistics_follow_pytorchs_rule_over_several_steps) {
  const int64_t channels = 3, spatial = 2;
  nn::batch_norm bn(channels, 1, spatial);
  bound b(bn);
  std::vector<double> running_mean(channels, 0.0), running_var(channels, 1.0);
  for (int step = 0; step < 4; ++step) {
    const int64_t rows = 2 + step;  // the unbiased factor changes with the count
    auto x = random_tensor({rows, channels * spatial}, 100 + step, 2.0f);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data()[i] += 0.5f * static_cast<float>(step);
    bn.forward(x, {true, 0});
    BOOST_REQUIRE(bn.last_status().is_ok());
    std::vector<double> mean, var;
    channel_statistics(x, channels, spatial, mean, var);
    const double count = static_cast<double>(rows * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      running_mean[c] = 0.9 * running_mean[c] + 0.1 * mean[c];
      running_var[c] = 0.9 * running_var[c] + 0.1 * var[c] * count / (count - 1);
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    BOOST_TEST(b.buffers[0].data()[c] == running_mean[c], boost::test_tools::tolerance(1e-5));
    BOOST_TEST(b.buffers[1].data()[c] == running_var[c], boost::test_tools::tolerance(1e-5));
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_evaluation_uses_the_running_statistics_and_leaves_them_alone) {
  nn::batch_norm bn(4);
  bound b(bn);
  auto x = random_tensor({6, 4}, 120, 3.0f);
  std::vector<float> train_out = bn.forward(x, {true, 0}).to_vector();
  auto mean = b.buffers[0].to_vector(), var = b.buffers[1].to_vector();
  std::vector<float> eval_out = bn.forward(x, {false, 0}).to_vector();
  BOOST_TEST(b.buffers[0].to_vector() == mean, boost::test_tools::per_element());
  BOOST_TEST(b.buffers[1].to_vector() == var, boost::test_tools::per_element());
  BOOST_TEST(train_out != eval_out);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = i % 4;
    double expect = (x.data()[i] - mean[c]) / std::sqrt(var[c] + 1e-5);
    BOOST_TEST(eval_out[i] == expect, boost::test_tools::tolerance(1e-4));
  }
  // In training the batch is normalized by its own statistics: mean 0 per channel.
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0;
    for (int64_t r = 0; r < 6; ++r)
      sum += train_out[r * 4 + c];
    BOOST_TEST(std::abs(sum) < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(batch_norm1d_at_batch_1_in_training_is_an_error_naming_the_layer) {
  using namespace nn::build;
  auto m = nn::model::create(seq(linear(3, 4), batch_norm1d(4)), {3}).value();
  auto out = m->forward(random_tensor({1, 3}, 130), true);
  BOOST_REQUIRE(!out.is_ok());
  BOOST_TEST((out.error().code() == error_code::invalid_argument));
  BOOST_TEST(out.error().message().find("layer 2 batch_norm1d(4)") != std::string::npos);
  BOOST_TEST(!m->backward(random_tensor({1, 4}, 131)).is_ok());
  BOOST_TEST(m->forward(random_tensor({1, 3}, 132), false).is_ok());  // evaluation can
  BOOST_TEST(m->forward(random_tensor({2, 3}, 133), true).is_ok());
}

BOOST_AUTO_TEST_CASE(normalization_layers_of_the_wrong_width_are_refused_naming_them) {
  using namespace nn::build;
  auto ln = nn::model::create(seq(linear(4, 6), layer_norm(5)), {4});
  BOOST_REQUIRE(!ln.is_ok());
  BOOST_TEST((ln.error().code() == error_code::shape_mismatch));
  BOOST_TEST(ln.error().message().find("layer_norm(5)") != std::string::npos);
  auto bn = nn::model::create(seq(batch_norm2d(3, 2, 2)), {13});
  BOOST_REQUIRE(!bn.is_ok());
  BOOST_TEST(bn.error().message().find("batch_norm2d(3, 2x2) expects 12") != std::string::npos);
  auto zero = nn::model::create(seq(batch_norm1d(0)), {4});
  BOOST_TEST((!zero.is_ok() && zero.error().code() == error_code::invalid_argument));
}

BOOST_AUTO_TEST_CASE(accumulate_adds_parameter_gradients_and_overwrite_replaces_them) {
  nn::layer_norm ln(5);
  check_accumulate(ln, random_tensor({3, 5}, 140));
  nn::batch_norm bn(2, 1, 3);
  check_accumulate(bn, random_tensor({3, 6}, 141));
}

BOOST_AUTO_TEST_SUITE_END()
