// The CPU kernels against plain double-precision references.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "dtrain/tensor/ops.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::max_relative_error;
using dtrain::testing::random_tensor;

namespace {

// Row-major reference: C = op(A) op(B), in double.
std::vector<float> reference_gemm(const dtrain::tensor& a, bool ta, const dtrain::tensor& b,
                                  bool tb) {
  int64_t m = ta ? a.size(1) : a.size(0), k = ta ? a.size(0) : a.size(1);
  int64_t n = tb ? b.size(0) : b.size(1);
  auto A = a.to_vector(), B = b.to_vector();
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) {
        double av = ta ? A[l * a.size(1) + i] : A[i * a.size(1) + l];
        double bv = tb ? B[j * b.size(1) + l] : B[l * b.size(1) + j];
        s += av * bv;
      }
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_ops)

BOOST_AUTO_TEST_CASE(matmul_matches_reference_in_all_transpose_combinations) {
  const int64_t m = 37, n = 53, k = 29;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto a = random_tensor(ta ? shape_t{k, m} : shape_t{m, k}, 1);
      auto b = random_tensor(tb ? shape_t{n, k} : shape_t{k, n}, 2);
      auto c = dtrain::tensor::empty({m, n});
      ops::matmul(a, ta, b, tb, c);
      BOOST_TEST(max_relative_error(c.to_vector(), reference_gemm(a, ta, b, tb)) < 1e-5);
    }
}

BOOST_AUTO_TEST_CASE(matmul_with_beta_one_accumulates) {
  auto a = random_tensor({8, 5}, 3), b = random_tensor({5, 6}, 4);
  auto c = dtrain::tensor::full({8, 6}, 1.0f);
  ops::matmul(a, false, b, false, c, 2.0f, 1.0f);
  auto ref = reference_gemm(a, false, b, false);
  for (auto& v : ref)
    v = 2.0f * v + 1.0f;
  BOOST_TEST(max_relative_error(c.to_vector(), ref) < 1e-5);
}

BOOST_AUTO_TEST_CASE(matmul_with_empty_inner_dimension_scales_c) {
  auto a = dtrain::tensor::zeros({3, 0}), b = dtrain::tensor::zeros({0, 4});
  auto c = dtrain::tensor::full({3, 4}, 5.0f);
  ops::matmul(a, false, b, false, c, 1.0f, 0.0f);
  for (float v : c.to_vector())
    BOOST_TEST(v == 0.0f);
}

BOOST_AUTO_TEST_CASE(bias_add_and_row_sums_match_reference) {
  auto y = random_tensor({4, 3}, 5), bias = random_tensor({3}, 6);
  auto before = y.to_vector(), bv = bias.to_vector();
  ops::add_bias(y, bias);
  auto after = y.to_vector();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      BOOST_TEST(after[i * 3 + j] == before[i * 3 + j] + bv[j]);
  auto sums = dtrain::tensor::full({3}, 10.0f);
  ops::sum_rows(y, sums, 1.0f);
  for (int j = 0; j < 3; ++j) {
    double s = 10.0;
    for (int i = 0; i < 4; ++i)
      s += after[i * 3 + j];
    BOOST_TEST(std::abs(sums.data()[j] - s) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(activations_match_their_definitions) {
  auto x = random_tensor({50}, 7, 3.0f);
  auto y = dtrain::tensor::empty({50});
  auto xv = x.to_vector();
  ops::activation_forward(ops::activation::relu, x, y);
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(y.data()[i] == std::max(0.0f, xv[i]));
  ops::activation_forward(ops::activation::tanh, x, y);
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(std::abs(y.data()[i] - std::tanh(xv[i])) < 1e-6);
  ops::activation_forward(ops::activation::gelu, x, y);
  for (int i = 0; i < 50; ++i) {
    double ref = 0.5 * xv[i] * (1.0 + std::erf(xv[i] / std::sqrt(2.0)));
    BOOST_TEST(std::abs(y.data()[i] - ref) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(dropout_keeps_about_one_minus_p_and_rescales) {
  const int64_t n = 100000;
  auto x = dtrain::tensor::full({n}, 1.0f);
  auto y = dtrain::tensor::empty({n}), mask = dtrain::tensor::empty({n});
  ops::dropout_forward(x, y, mask, 0.25f, 42);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    float v = y.data()[i];
    BOOST_TEST((v == 0.0f || std::abs(v - 1.0f / 0.75f) < 1e-6));
    kept += v != 0.0f;
  }
  BOOST_TEST(std::abs(static_cast<double>(kept) / n - 0.75) < 0.01);
  auto mask2 = dtrain::tensor::empty({n}), y2 = dtrain::tensor::empty({n});
  ops::dropout_forward(x, y2, mask2, 0.25f, 42);
  BOOST_TEST(mask.bitwise_equal(mask2));
  ops::dropout_forward(x, y2, mask2, 0.25f, 43);
  BOOST_TEST(!mask.bitwise_equal(mask2));
}

BOOST_AUTO_TEST_CASE(cross_entropy_matches_double_reference_and_is_stable) {
  const int64_t rows = 6, cols = 10;
  auto logits = random_tensor({rows, cols}, 8, 4.0f);
  // Huge logits overflow a naive exp; the loss must stay finite.
  logits.data()[0] = 3e4f;
  logits.data()[cols + 3] = -3e4f;
  std::vector<float> labels{0, 3, 9, 2, 5, 7};
  auto lab = dtrain::tensor::from_vector(labels, {rows});
  auto grad = dtrain::tensor::empty({rows, cols}), scratch = dtrain::tensor::empty({rows});
  float loss = ops::softmax_cross_entropy(logits, lab, &grad, scratch);
  auto z = logits.to_vector();
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double mx = -1e300, s = 0;
    for (int64_t j = 0; j < cols; ++j)
      mx = std::max(mx, static_cast<double>(z[i * cols + j]));
    for (int64_t j = 0; j < cols; ++j)
      s += std::exp(z[i * cols + j] - mx);
    total += std::log(s) + mx - z[i * cols + static_cast<int64_t>(labels[i])];
    for (int64_t j = 0; j < cols; ++j) {
      double p = std::exp(z[i * cols + j] - mx) / s;
      double g = (p - (j == labels[i] ? 1.0 : 0.0)) / rows;
      BOOST_TEST(std::abs(grad.data()[i * cols + j] - g) < 1e-6);
    }
  }
  BOOST_TEST(std::isfinite(loss));
  BOOST_TEST(std::abs(loss - total / rows) < 1e-4);
}

BOOST_AUTO_TEST_CASE(cross_entropy_with_label_out_of_range_is_nan) {
  auto logits = random_tensor({2, 3}, 9);
  auto lab = dtrain::tensor::from_vector({1, 3}, {2});
  auto scratch = dtrain::tensor::empty({2});
  BOOST_TEST(std::isnan(ops::softmax_cross_entropy(logits, lab, nullptr, scratch)));
}

BOOST_AUTO_TEST_CASE(mse_matches_reference) {
  auto p = random_tensor({5, 2}, 10), t = random_tensor({5, 2}, 11);
  auto grad = dtrain::tensor::empty({5, 2}), scratch = dtrain::tensor::empty({5});
  float loss = ops::mse(p, t, &grad, scratch);
  auto pv = p.to_vector(), tv = t.to_vector();
  double s = 0;
  for (int i = 0; i < 10; ++i) {
    s += (pv[i] - tv[i]) * static_cast<double>(pv[i] - tv[i]);
    BOOST_TEST(std::abs(grad.data()[i] - 2.0 * (pv[i] - tv[i]) / 10.0) < 1e-6);
  }
  BOOST_TEST(std::abs(loss - s / 10.0) < 1e-5);
}

BOOST_AUTO_TEST_CASE(count_correct_takes_the_first_maximum) {
  auto logits = dtrain::tensor::from_vector({1, 5, 5, 0, 0, 2, 3, 3, 3}, {3, 3});
  auto lab = dtrain::tensor::from_vector({1, 2, 0}, {3});
  auto scratch = dtrain::tensor::empty({3});
  BOOST_TEST(ops::count_correct(logits, lab, scratch) == 3);
  auto wrong = dtrain::tensor::from_vector({2, 2, 1}, {3});
  BOOST_TEST(ops::count_correct(logits, wrong, scratch) == 1);
}

BOOST_AUTO_TEST_CASE(elementwise_helpers_match_reference) {
  auto x = random_tensor({9}, 12), y = random_tensor({9}, 13);
  auto xv = x.to_vector(), yv = y.to_vector();
  ops::axpy(0.5f, x, y);
  for (int i = 0; i < 9; ++i)
    BOOST_TEST(y.data()[i] == yv[i] + 0.5f * xv[i]);
  ops::scale(x, -2.0f);
  for (int i = 0; i < 9; ++i)
    BOOST_TEST(x.data()[i] == -2.0f * xv[i]);
  ops::fill(x, 0.25f);
  BOOST_TEST(ops::sum(x) == 9 * 0.25);
}





BOOST_AUTO_TEST_CASE(empty_batches_are_no_ops) {
  auto y = dtrain::tensor::zeros({0, 4}), bias = dtrain::tensor::full({4}, 1.0f);
  ops::add_bias(y, bias);
  auto sums = dtrain::tensor::full({4}, 3.0f);
  ops::sum_rows(y, sums, 0.0f);
  for (float v : sums.to_vector())
    BOOST_TEST(v == 0.0f);
}


BOOST_AUTO_TEST_SUITE_END()
