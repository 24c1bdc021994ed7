// conv2d and the pools against direct (double-precision) references on
// random inputs and against finite differences, on the CPU: odd sizes,
// batch 1, and every option of the window (stride, padding, dilation,
// groups, rectangular kernels).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/nn/conv.hpp"
#include "dtrain/nn/pooling.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

struct conv_case {
  nn::image_shape in;
  int64_t out_channels;
  nn::conv2d_options opt;
  int64_t batch;
};

nn::conv2d_options rect(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                        int64_t dh, int64_t dw, int64_t groups, bool bias = true) {
  nn::conv2d_options o;
  o.kernel_h = kh, o.kernel_w = kw, o.stride_h = sh, o.stride_w = sw;
  o.pad_h = ph, o.pad_w = pw, o.dilation_h = dh, o.dilation_w = dw;
  o.groups = groups, o.bias = bias;
  return o;
}

// The window combinations every conv test runs through.
std::vector<conv_case> conv_cases() {
  using nn::conv2d_options;
  return {
      {{3, 7, 5}, 4, conv2d_options::square(3, 2), 2},                 // odd sizes, stride 2
      {{3, 7, 5}, 4, conv2d_options::square(3, 2, 1), 1},              // padded, batch 1
      {{4, 6, 6}, 6, conv2d_options::square(3, 1, 2, 2, 2), 2},        // dilation, groups
      {{2, 5, 7}, 3, conv2d_options::square(1), 3},                    // 1x1: no im2col
      {{4, 9, 8}, 8, rect(3, 2, 2, 1, 0, 1, 1, 2, 4), 2},              // rectangular, depthwise
      {{2, 6, 5}, 2, rect(2, 3, 1, 2, 1, 0, 2, 1, 1, false), 1},       // no bias
  };
}

struct conv_params {
  tensor weight, bias, weight_grad, bias_grad;
};

// A conv2d with random parameters bound to host tensors.
conv_params bind_random(nn::conv2d& conv, uint64_t seed) {
  BOOST_REQUIRE(conv.output_features(conv.input_shape().features()).is_ok());
  conv_params p;
  auto specs = conv.parameter_specs();
  p.weight = random_tensor(specs[0].shape, seed, 0.5f);
  p.weight_grad = tensor::zeros(specs[0].shape);
  std::vector<tensor> params{p.weight}, grads{p.weight_grad};
  if (specs.size() > 1) {
    p.bias = random_tensor(specs[1].shape, seed + 1, 0.5f);
    p.bias_grad = tensor::zeros(specs[1].shape);
    params.push_back(p.bias);
    grads.push_back(p.bias_grad);
  }
  conv.bind(params, grads);
  return p;
}

// Calls f(input index, weight index, output index) for every multiply of
// a direct convolution, skipping taps in the padding.
void for_each_tap(const conv_case& k, const std::function<void(int64_t, int64_t, int64_t)>& f,
                  int64_t oh, int64_t ow) {
  const auto& o = k.opt;
  const int64_t cg = k.in.channels / o.groups, og = k.out_channels / o.groups;
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t oc = 0; oc < k.out_channels; ++oc)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < o.kernel_h; ++i)
              for (int64_t j = 0; j < o.kernel_w; ++j) {
                int64_t ih = r * o.stride_h - o.pad_h + i * o.dilation_h;
                int64_t iw = q * o.stride_w - o.pad_w + j * o.dilation_w;
                if (ih < 0 || ih >= k.in.height || iw < 0 || iw >= k.in.width)
                  continue;
                int64_t c = oc / og * cg + ci;
                int64_t x_at = n * k.in.features() + (c * k.in.height + ih) * k.in.width + iw;
                int64_t w_at = ((oc * cg + ci) * o.kernel_h + i) * o.kernel_w + j;
                int64_t y_at = ((n * k.out_channels + oc) * oh + r) * ow + q;
                f(x_at, w_at, y_at);
              }
}

std::vector<double> direct_forward(const conv_case& k, const tensor& x, const conv_params& p,
                                   int64_t oh, int64_t ow) {
  std::vector<double> y(static_cast<size_t>(k.batch * k.out_channels * oh * ow), 0.0);
  if (p.bias.defined())
    for (size_t at = 0; at < y.size(); ++at)
      y[at] = p.bias.data()[(at / static_cast<size_t>(oh * ow)) % k.out_channels];
  for_each_tap(k, [&](int64_t x_at, int64_t w_at, int64_t y_at) {
    y[y_at] += static_cast<double>(x.data()[x_at]) * p.weight.data()[w_at];
  }, oh, ow);
  return y;
}

bool all_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
               const std::string& what) {
  if (got.size() != want.size()) {
    BOOST_TEST_MESSAGE(what << ": " << got.size() << " values, want " << want.size());
    return false;
  }
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i]))) && bad++ < 5)
      BOOST_TEST_MESSAGE(what << "[" << i << "]: " << got[i] << ", want " << want[i]);
  return bad == 0;
}

double weighted_sum(const tensor& y, const tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    s += static_cast<double>(y.data()[i]) * r.data()[i];
  return s;
}

// Central differences of f over every element of `values` against
// `analytic`; returns the number of mismatches.
int finite_difference_mismatches(tensor values, const std::vector<float>& analytic,
                                 const std::function<double()>& f, const std::string& what,
                                 float eps = 1e-2f) {
  int bad = 0;
  for (int64_t i = 0; i < values.numel(); ++i) {
    float saved = values.data()[i];
    values.data()[i] = saved + eps;
    double plus = f();
    values.data()[i] = saved - eps;
    double minus = f();
    values.data()[i] = saved;
    double numeric = (plus - minus) / (2.0 * eps);
    if (!(std::abs(numeric - analytic[i]) <= 2e-3 + 2e-2 * std::abs(analytic[i])) && bad++ < 5)
      BOOST_TEST_MESSAGE(what << "[" << i << "]: numeric " << numeric << ", analytic "
                              << analytic[i]);
  }
  return bad;
}

// The layer's output against a direct convolution in double.
void check_forward(const conv_case& k, uint64_t seed) {
  nn::conv2d conv(k.in, k.out_channels, k.opt);
  auto p = bind_random(conv, seed);
  auto x = random_tensor({k.batch, k.in.features()}, seed + 2);
  auto out = conv.output_shape();
  const tensor& y = conv.forward(x, {});
  BOOST_TEST((y.shape() == shape_t{k.batch, out.features()}), conv.describe());
  BOOST_TEST(all_close(y.to_vector(), direct_forward(k, x, p, out.height, out.width), 1e-5,
                       conv.describe()),
             conv.describe());
}

void fill_nan(tensor& t) { std::fill(t.data(), t.data() + t.numel(), std::nanf("")); }

// dL/dx, dL/dW and dL/db against the direct convolution's adjoint. dW and
// db sum batch * OH * OW float products each: `sum_tolerance` allows for
// that many roundings.
void check_backward(const conv_case& k, uint64_t seed, double sum_tolerance = 1e-5) {
  nn::conv2d conv(k.in, k.out_channels, k.opt);
  auto p = bind_random(conv, seed);
  auto out = conv.output_shape();
  auto x = random_tensor({k.batch, k.in.features()}, seed + 2);
  auto dy = random_tensor({k.batch, out.features()}, seed + 3);
  // Without accumulate the gradients are overwritten: NaN would show.
  fill_nan(p.weight_grad);
  if (p.bias_grad.defined())
    fill_nan(p.bias_grad);
  conv.forward(x, {});
  auto dx = conv.backward(dy, {true, false}).to_vector();
  std::vector<double> want_dx(static_cast<size_t>(x.numel()), 0.0);
  std::vector<double> want_dw(static_cast<size_t>(p.weight.numel()), 0.0);
  std::vector<double> want_db(static_cast<size_t>(k.out_channels), 0.0);
  for_each_tap(k, [&](int64_t x_at, int64_t w_at, int64_t y_at) {
    want_dx[x_at] += static_cast<double>(p.weight.data()[w_at]) * dy.data()[y_at];
    want_dw[w_at] += static_cast<double>(x.data()[x_at]) * dy.data()[y_at];
  }, out.height, out.width);
  for (int64_t at = 0; at < dy.numel(); ++at)
    want_db[(at / (out.height * out.width)) % k.out_channels] += dy.data()[at];
  BOOST_TEST(all_close(dx, want_dx, 1e-5, conv.describe() + " dx"), conv.describe());
  BOOST_TEST(all_close(p.weight_grad.to_vector(), want_dw, sum_tolerance,
                       conv.describe() + " dW"),
             conv.describe());
  if (k.opt.bias)
    BOOST_TEST(all_close(p.bias_grad.to_vector(), want_db, sum_tolerance,
                         conv.describe() + " db"),
               conv.describe());
}

} // namespace

BOOST_AUTO_TEST_SUITE(conv_layers)

BOOST_AUTO_TEST_CASE(conv2d_forward_matches_a_direct_convolution) {
  uint64_t seed = 10;
  for (const auto& k : conv_cases()) {
    check_forward(k, seed);
    seed += 10;
  }
}

BOOST_AUTO_TEST_CASE(conv2d_backward_matches_the_direct_convolutions_adjoint) {
  uint64_t seed = 100;
  for (const auto& k : conv_cases()) {
    check_backward(k, seed);
    seed += 10;
  }
}

// The layer lays the columns of as many samples as fit in column_budget
// floats side by side: each case's batch makes two full chunks of several
// samples and a last chunk of one (which writes its product in place).
BOOST_AUTO_TEST_CASE(conv2d_matches_the_direct_convolution_across_several_chunks) {
  using nn::conv2d_options;
  std::vector<conv_case> cases{
      {{4, 32, 32}, 4, conv2d_options::square(3, 1, 1), 0},
      {{16, 32, 32}, 2, conv2d_options::square(1), 0},  // 1x1: the columns are the rows
      {{6, 40, 40}, 6, conv2d_options::square(3, 2, 1, 1, 3), 0},  // groups, stride 2
  };
  uint64_t seed = 700;
  for (auto& k : cases) {
    const auto out = nn::conv2d(k.in, k.out_channels, k.opt).output_shape();
    const int64_t per_sample =
        k.in.channels * k.opt.kernel_h * k.opt.kernel_w * out.height * out.width;
    const int64_t chunk = nn::conv2d::column_budget / per_sample;
    BOOST_REQUIRE(chunk >= 2);
    k.batch = 2 * chunk + 1;
    check_forward(k, seed);
    // dW sums batch * OH * OW products (10,000 to 34,000 here).
    check_backward(k, seed + 5, 2e-4);
    seed += 10;
  }
}

// The chunking follows the batch: a one-sample batch after a batch of
// several chunks (whose columns backward may not reuse), and a backward
// without the input gradient over several chunks.
BOOST_AUTO_TEST_CASE(conv2d_follows_the_batch_size_between_chunkings) {
  for (auto opt : {nn::conv2d_options::square(3, 1, 1), nn::conv2d_options::square(1)}) {
    conv_case k{{4, 32, 32}, 3, opt, 0};
    nn::conv2d conv(k.in, k.out_channels, k.opt);
    auto p = bind_random(conv, 900);
    auto out = conv.output_shape();
    const int64_t per_sample =
        k.in.channels * opt.kernel_h * opt.kernel_w * out.height * out.width;
    const int64_t big = 2 * (nn::conv2d::column_budget / per_sample) + 1;
    for (int64_t batch : {big, int64_t{1}, big}) {
      k.batch = batch;
      auto x = random_tensor({batch, k.in.features()}, 901 + batch);
      auto dy = random_tensor({batch, out.features()}, 902 + batch);
      BOOST_TEST(all_close(conv.forward(x, {}).to_vector(),
                           direct_forward(k, x, p, out.height, out.width), 1e-5,
                           conv.describe()),
                 conv.describe() << " batch " << batch);
      fill_nan(p.weight_grad);
      fill_nan(p.bias_grad);
      // The first layer's backward: parameter gradients only.
      BOOST_TEST(!conv.backward(dy, {false, false}).defined());
      std::vector<double> want_dw(static_cast<size_t>(p.weight.numel()), 0.0);
      for_each_tap(k, [&](int64_t x_at, int64_t w_at, int64_t y_at) {
        want_dw[w_at] += static_cast<double>(x.data()[x_at]) * dy.data()[y_at];
      }, out.height, out.width);
      BOOST_TEST(all_close(p.weight_grad.to_vector(), want_dw, 2e-4, conv.describe() + " dW"),
                 conv.describe() << " batch " << batch);
    }
  }
}

// The context's compute precision reaches the conv's GEMMs (forward and
// both backward ones): bf16 operands give results near float32's, but not
// the same bits.
BOOST_AUTO_TEST_CASE(conv2d_computes_its_gemms_in_the_contexts_precision) {
  conv_case k{{3, 9, 9}, 4, nn::conv2d_options::square(3, 1, 1), 2};
  auto run = [&](dtrain::precision compute) {
    nn::conv2d conv(k.in, k.out_channels, k.opt);
    auto p = bind_random(conv, 950);
    auto x = random_tensor({k.batch, k.in.features()}, 951);
    auto dy = random_tensor({k.batch, conv.output_shape().features()}, 952);
    nn::forward_context fc;
    fc.compute = compute;
    nn::backward_context bc;
    bc.accumulate = false;
    bc.compute = compute;
    std::vector<float> out = conv.forward(x, fc).to_vector();
    std::vector<float> dx = conv.backward(dy, bc).to_vector();
    std::vector<float> dw = p.weight_grad.to_vector();
    out.insert(out.end(), dx.begin(), dx.end());
    out.insert(out.end(), dw.begin(), dw.end());
    return out;
  };
  auto exact = run(dtrain::precision::fp32), rounded = run(dtrain::precision::bf16);
  BOOST_REQUIRE(exact.size() == rounded.size());
  double worst = 0;
  size_t differ = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    worst = std::max(worst, std::abs(double(exact[i]) - rounded[i]) / (1.0 + std::abs(exact[i])));
    differ += exact[i] != rounded[i];
  }
  BOOST_TEST(worst < 0.1);  // bf16 keeps 8 bits: about 0.4% per operand, summed
  BOOST_TEST(differ > exact.size() / 2);
}

BOOST_AUTO_TEST_CASE(conv2d_gradients_match_finite_differences) {
  uint64_t seed = 200;
  for (const auto& k : conv_cases()) {
    nn::conv2d conv(k.in, k.out_channels, k.opt);
    auto p = bind_random(conv, seed);
    auto x = random_tensor({k.batch, k.in.features()}, seed + 2);
    auto r = random_tensor({k.batch, conv.output_shape().features()}, seed + 3);
    conv.forward(x, {});
    auto dx = conv.backward(r, {true, false}).to_vector();
    auto loss = [&] { return weighted_sum(conv.forward(x, {}), r); };
    BOOST_TEST(finite_difference_mismatches(x, dx, loss, conv.describe() + " input") == 0);
    BOOST_TEST(finite_difference_mismatches(p.weight, p.weight_grad.to_vector(), loss,
                                            conv.describe() + " weight") == 0);
    if (k.opt.bias)
      BOOST_TEST(finite_difference_mismatches(p.bias, p.bias_grad.to_vector(), loss,
                                              conv.describe() + " bias") == 0);
    seed += 10;
  }
}

BOOST_AUTO_TEST_CASE(conv2d_backward_adds_with_accumulate_and_overwrites_without) {
  nn::conv2d conv({2, 5, 4}, 3, nn::conv2d_options::square(3, 1, 1));
  auto p = bind_random(conv, 300);
  auto x = random_tensor({2, 40}, 301), dy = random_tensor({2, 60}, 302);
  conv.forward(x, {});
  conv.backward(dy, {false, false});
  auto fresh_w = p.weight_grad.to_vector(), fresh_b = p.bias_grad.to_vector();
  // Overwrite: stale values (NaN included) in the buffer do not leak through.
  p.weight_grad.data()[0] = std::nanf("");
  p.bias_grad.data()[1] = 7.0f;
  conv.backward(dy, {false, false});
  BOOST_TEST(p.weight_grad.to_vector() == fresh_w);
  BOOST_TEST(p.bias_grad.to_vector() == fresh_b);
  conv.backward(dy, {false, true});
  auto doubled_w = p.weight_grad.to_vector(), doubled_b = p.bias_grad.to_vector();
  for (size_t i = 0; i < fresh_w.size(); ++i)
    BOOST_TEST(doubled_w[i] == 2.0f * fresh_w[i], boost::test_tools::tolerance(1e-6f));
  for (size_t i = 0; i < fresh_b.size(); ++i)
    BOOST_TEST(doubled_b[i] == 2.0f * fresh_b[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(conv2d_skips_the_input_gradient_when_not_needed) {
  nn::conv2d conv({1, 6, 6}, 2, nn::conv2d_options::square(3));
  auto p = bind_random(conv, 310);
  auto x = random_tensor({3, 36}, 311), dy = random_tensor({3, 32}, 312);
  conv.forward(x, {});
  BOOST_TEST(conv.backward(dy, {true, false}).defined());
  auto with_dx = p.weight_grad.to_vector();
  BOOST_TEST(!conv.backward(dy, {false, false}).defined());
  BOOST_TEST(p.weight_grad.to_vector() == with_dx);
}

BOOST_AUTO_TEST_CASE(conv2d_reuses_its_buffers_while_the_batch_size_stays) {
  nn::conv2d conv({2, 5, 5}, 3, nn::conv2d_options::square(3, 1, 1));
  bind_random(conv, 320);
  auto x = random_tensor({4, 50}, 321), dy = random_tensor({4, 75}, 322);
  const float* out = conv.forward(x, {}).data();
  const float* dx = conv.backward(dy, {true, true}).data();
  BOOST_TEST(conv.forward(x, {}).data() == out);
  BOOST_TEST(conv.backward(dy, {true, true}).data() == dx);
}

BOOST_AUTO_TEST_CASE(conv2d_initializes_uniformly_within_pytorchs_default_bound) {
  nn::conv2d conv({4, 8, 8}, 6, nn::conv2d_options::square(3, 1, 0, 1, 2));
  auto specs = conv.parameter_specs();
  BOOST_TEST((specs[0].shape == shape_t{6, 2, 3, 3}));
  BOOST_TEST((specs[1].shape == shape_t{6}));
  std::vector<tensor> params{tensor::zeros(specs[0].shape), tensor::zeros(specs[1].shape)};
  rng gen(5);
  conv.initialize(params, gen);
  const float bound = 1.0f / std::sqrt(18.0f);  // fan_in = 2 * 3 * 3
  float largest = 0.0f;
  for (auto& t : params)
    for (float v : t.to_vector())
      largest = std::max(largest, std::abs(v));
  BOOST_TEST(largest <= bound);
  BOOST_TEST(largest > 0.8f * bound);
}

BOOST_AUTO_TEST_CASE(conv2d_rejects_a_wrong_input_size_naming_both_shapes) {
  nn::conv2d conv({3, 8, 8}, 4, nn::conv2d_options::square(3));
  auto bad = conv.output_features(190);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.error().code() == error_code::shape_mismatch);
  BOOST_TEST(bad.error().message().find("conv2d(3x8x8->4") != std::string::npos);
  BOOST_TEST(bad.error().message().find("192") != std::string::npos);
  BOOST_TEST(bad.error().message().find("190") != std::string::npos);
  BOOST_TEST(conv.output_features(192).value() == 4 * 6 * 6);
}

BOOST_AUTO_TEST_CASE(conv2d_rejects_options_that_do_not_make_sense) {
  using nn::conv2d_options;
  auto code = [](nn::image_shape in, int64_t out, const conv2d_options& o) {
    auto r = nn::conv2d(in, out, o).output_features(in.features());
    return r ? error_code::ok : r.error().code();
  };
  BOOST_TEST(code({3, 8, 8}, 4, conv2d_options::square(3, 1, 0, 1, 2)) ==
             error_code::invalid_argument);  // 3 channels in 2 groups
  BOOST_TEST(code({4, 8, 8}, 3, conv2d_options::square(3, 1, 0, 1, 2)) ==
             error_code::invalid_argument);  // 3 out channels in 2 groups
  BOOST_TEST(code({1, 4, 4}, 2, conv2d_options::square(5)) == error_code::invalid_argument);
  BOOST_TEST(code({1, 4, 4}, 2, conv2d_options::square(3, 1, 0, 2)) ==
             error_code::invalid_argument);  // dilated kernel spans 5
  BOOST_TEST(code({1, 4, 4}, 2, conv2d_options::square(3, 0)) == error_code::invalid_argument);
  BOOST_TEST(code({1, 4, 4}, 2, conv2d_options::square(3, 1, -1)) ==
             error_code::invalid_argument);
  BOOST_TEST(code({1, 4, 4}, 0, conv2d_options::square(3)) == error_code::invalid_argument);
  BOOST_TEST(code({1, 4, 4}, 2, conv2d_options::square(5, 1, 1)) == error_code::ok);
}

BOOST_AUTO_TEST_CASE(conv_and_pool_layers_have_kernels_for_cuda) {
  nn::conv2d conv({1, 4, 4}, 2, nn::conv2d_options::square(3));
  BOOST_TEST(conv.check_device(device::cuda(0)).is_ok());
  BOOST_TEST(conv.check_device(device::cpu()).is_ok());
  BOOST_TEST(nn::max_pool2d({1, 4, 4}, 2)->check_device(device::cuda(0)).is_ok());
  BOOST_TEST(nn::global_avg_pool({1, 4, 4})->check_device(device::cuda(0)).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
