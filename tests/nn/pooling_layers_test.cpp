// Max, average and global average pooling against direct references, and
// their backward against finite differences, on the CPU.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/nn/pooling.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

struct pool_case {
  nn::image_shape in;
  int64_t kernel, stride, padding, batch;
};

std::vector<pool_case> pool_cases() {
  return {
      {{2, 6, 6}, 2, 0, 0, 2},  // the usual 2x2, stride 2
      {{3, 7, 5}, 3, 2, 1, 1},  // odd sizes, padding, batch 1
      {{1, 5, 7}, 2, 1, 1, 3},  // overlapping windows
      {{2, 7, 7}, 3, 3, 0, 2},  // a remainder left over
  };
}

// Distinct values, at least 0.05 apart, in random places: no ties, and no
// two values within a finite-difference step of each other.
tensor distinct_values(int64_t batch, int64_t features, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(batch * features));
  std::iota(v.begin(), v.end(), 0.0f);
  rng gen(seed);
  for (size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[static_cast<size_t>(gen.uniform(0.0f, 1.0f) * i) % i]);
  for (auto& x : v)
    x = 0.05f * x - 1.0f;
  return tensor::from_vector(v, {batch, features});
}

// Direct pooling of sample-major x: max or the padded average.
std::vector<double> direct_pool(bool max, const pool_case& k, const tensor& x) {
  int64_t stride = k.stride == 0 ? k.kernel : k.stride;
  int64_t oh = (k.in.height + 2 * k.padding - k.kernel) / stride + 1;
  int64_t ow = (k.in.width + 2 * k.padding - k.kernel) / stride + 1;
  std::vector<double> y;
  for (int64_t n = 0; n < k.batch; ++n)
    for (int64_t c = 0; c < k.in.channels; ++c)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double best = -std::numeric_limits<double>::infinity(), total = 0;
          for (int64_t i = 0; i < k.kernel; ++i)
            for (int64_t j = 0; j < k.kernel; ++j) {
              int64_t ih = r * stride - k.padding + i, iw = q * stride - k.padding + j;
              if (ih < 0 || ih >= k.in.height || iw < 0 || iw >= k.in.width)
                continue;
              double v = x.data()[n * k.in.features() + (c * k.in.height + ih) * k.in.width + iw];
              best = std::max(best, v);
              total += v;
            }
          y.push_back(max ? best : total / static_cast<double>(k.kernel * k.kernel));
        }
  return y;
}

double weighted_sum(const tensor& y, const tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    s += static_cast<double>(y.data()[i]) * r.data()[i];
  return s;
}

int finite_difference_mismatches(tensor x, const std::vector<float>& analytic,
                                 const std::function<double()>& f, const std::string& what) {
  const float eps = 1e-2f;
  int bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    float saved = x.data()[i];
    x.data()[i] = saved + eps;
    double plus = f();
    x.data()[i] = saved - eps;
    double minus = f();
    x.data()[i] = saved;
    double numeric = (plus - minus) / (2.0 * eps);
    if (!(std::abs(numeric - analytic[i]) <= 2e-3 + 2e-2 * std::abs(analytic[i])) && bad++ < 5)
      BOOST_TEST_MESSAGE(what << "[" << i << "]: numeric " << numeric << ", analytic "
                              << analytic[i]);
  }
  return bad;
}

std::unique_ptr<nn::pool2d> make(bool max, const pool_case& k) {
  return max ? nn::max_pool2d(k.in, k.kernel, k.stride, k.padding)
             : nn::avg_pool2d(k.in, k.kernel, k.stride, k.padding);
}

} // namespace

BOOST_AUTO_TEST_SUITE(pooling_layers)

BOOST_AUTO_TEST_CASE(max_and_average_pools_match_direct_pooling) {
  uint64_t seed = 1;
  for (bool max : {true, false})
    for (const auto& k : pool_cases()) {
      auto pool = make(max, k);
      auto features = pool->output_features(k.in.features());
      BOOST_REQUIRE_MESSAGE(features.is_ok(), pool->describe());
      auto x = random_tensor({k.batch, k.in.features()}, seed++);
      auto got = pool->forward(x, {}).to_vector();
      auto want = direct_pool(max, k, x);
      BOOST_TEST(got.size() == want.size(), pool->describe());
      BOOST_TEST(static_cast<int64_t>(want.size()) == k.batch * *features);
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        BOOST_TEST(got[i] == want[i], pool->describe() << " [" << i << "]"
                                                       << boost::test_tools::tolerance(1e-5));
    }
}

BOOST_AUTO_TEST_CASE(pool_gradients_match_finite_differences) {
  uint64_t seed = 50;
  for (bool max : {true, false})
    for (const auto& k : pool_cases()) {
      auto pool = make(max, k);
      int64_t out = pool->output_features(k.in.features()).value();
      auto x = distinct_values(k.batch, k.in.features(), seed++);
      auto r = random_tensor({k.batch, out}, seed++);
      pool->forward(x, {});
      auto dx = pool->backward(r, {true, true}).to_vector();
      auto loss = [&] { return weighted_sum(pool->forward(x, {}), r); };
      BOOST_TEST(finite_difference_mismatches(x, dx, loss, pool->describe()) == 0);
    }
}

BOOST_AUTO_TEST_CASE(max_pool_routes_the_gradient_to_the_maximum_only) {
  auto pool = nn::max_pool2d({1, 2, 2}, 2);
  auto x = tensor::from_vector({0.5f, 3.0f, -1.0f, 2.0f}, {1, 4});
  BOOST_TEST(pool->forward(x, {}).to_vector() == std::vector<float>{3.0f});
  auto dy = tensor::from_vector({5.0f}, {1, 1});
  BOOST_TEST(pool->backward(dy, {}).to_vector() == (std::vector<float>{0, 5, 0, 0}));
}

BOOST_AUTO_TEST_CASE(max_pool_lets_a_nan_through) {
  auto pool = nn::max_pool2d({1, 2, 2}, 2);
  auto x = tensor::from_vector({0.5f, std::nanf(""), 9.0f, 2.0f}, {1, 4});
  BOOST_TEST(std::isnan(pool->forward(x, {}).to_vector()[0]));
}

// The 2x2 stride-2 pool has a path of its own: on ties and NaNs it must
// still pick what the general rule picks, the first of the largest taps in
// window order, a NaN beating any number (so the gradient goes there).
BOOST_AUTO_TEST_CASE(max_pool_2x2_breaks_ties_and_nans_as_the_general_rule) {
  const int64_t channels = 3, height = 6, width = 8, batch = 2;
  const int64_t features = channels * height * width;
  rng gen(77);
  std::vector<float> v(static_cast<size_t>(batch * features));
  const float choices[3] = {0.0f, 1.0f, std::nanf("")};
  for (auto& x : v)
    x = choices[gen.below(3)];
  auto pool = nn::max_pool2d({channels, height, width}, 2);
  BOOST_REQUIRE(pool->output_features(features).is_ok());
  auto x = tensor::from_vector(v, {batch, features});
  auto y = pool->forward(x, {}).to_vector();
  const int64_t out_features = channels * (height / 2) * (width / 2);
  auto dy = tensor::full({batch, out_features}, 1.0f);
  auto dx = pool->backward(dy, {}).to_vector();
  std::vector<float> want_dx(v.size(), 0.0f);
  size_t out = 0;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t r = 0; r < height / 2; ++r)
        for (int64_t q = 0; q < width / 2; ++q, ++out) {
          int64_t where = -1;
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 2; ++j) {
              int64_t at = n * features + c * height * width + (2 * r + i) * width + 2 * q + j;
              bool nan = std::isnan(v[at]);
              if (where < 0 || v[at] > v[where] || (nan && !std::isnan(v[where])))
                where = at;
            }
          want_dx[where] += 1.0f;
          if (std::isnan(v[where]))
            BOOST_TEST(std::isnan(y[out]), "window " << out);
          else
            BOOST_TEST(y[out] == v[where], "window " << out);
        }
  BOOST_TEST(dx == want_dx);
}

BOOST_AUTO_TEST_CASE(global_average_pool_takes_each_channels_mean) {
  auto pool = nn::global_avg_pool({3, 5, 3});
  BOOST_TEST(pool->output_features(45).value() == 3);
  auto x = random_tensor({2, 45}, 90);
  auto y = pool->forward(x, {}).to_vector();
  BOOST_REQUIRE(y.size() == 6u);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c) {
      double total = 0;
      for (int64_t i = 0; i < 15; ++i)
        total += x.data()[n * 45 + c * 15 + i];
      BOOST_TEST(y[n * 3 + c] == total / 15, boost::test_tools::tolerance(1e-5));
    }
  auto dy = random_tensor({2, 3}, 91);
  auto dx = pool->backward(dy, {}).to_vector();
  for (int64_t i = 0; i < 90; ++i)
    BOOST_TEST(dx[i] == dy.data()[i / 15] / 15.0f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(pools_reject_wrong_sizes_and_windows) {
  auto wrong = nn::max_pool2d({2, 4, 4}, 2)->output_features(31);
  BOOST_REQUIRE(!wrong);
  BOOST_TEST(wrong.error().code() == error_code::shape_mismatch);
  BOOST_TEST(wrong.error().message().find("max_pool2d(2x4x4") != std::string::npos);
  BOOST_TEST(wrong.error().message().find("32") != std::string::npos);
  auto code = [](std::unique_ptr<nn::pool2d> p, int64_t in) {
    auto r = p->output_features(in);
    return r ? error_code::ok : r.error().code();
  };
  BOOST_TEST(code(nn::max_pool2d({1, 4, 4}, 2, 2, 2), 16) == error_code::invalid_argument);
  BOOST_TEST(code(nn::avg_pool2d({1, 4, 4}, 5), 16) == error_code::invalid_argument);
  BOOST_TEST(code(nn::avg_pool2d({1, 4, 4}, 0), 16) == error_code::invalid_argument);
  BOOST_TEST(code(nn::max_pool2d({1, 4, 4}, 3, 1, 1), 16) == error_code::ok);
}

BOOST_AUTO_TEST_SUITE_END()
