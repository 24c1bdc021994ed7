// Reduced-precision GEMM compute on the CPU: round_to() against known
// values of bfloat16, IEEE half and TF32, and gemm_ex at each precision
// against the float32 GEMM, within the error bound of its rounding.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "dtrain/tensor/kernels.hpp"
#include "dtrain/tensor/ops.hpp"
#include "dtrain/tensor/precision.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::random_tensor;

namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Largest |a - b| / max(|b|, floor) over the elements: a relative error that
// does not blow up where the reference is near zero.
double max_error(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(a[i]) - b[i]) / std::fmax(std::fabs(b[i]), floor));
  return worst;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mixed_precision)

BOOST_AUTO_TEST_CASE(precision_names_parse_and_unknown_ones_are_refused) {
  for (precision p : {precision::fp32, precision::tf32, precision::bf16, precision::fp16}) {
    auto parsed = parse_precision(to_string(p));
    BOOST_TEST_REQUIRE(parsed.is_ok());
    BOOST_TEST((*parsed == p));
  }
  auto bad = parse_precision("fp8");
  BOOST_TEST_REQUIRE(!bad.is_ok());
  BOOST_TEST(bad.error().message().find("fp8") != std::string::npos);
  BOOST_TEST(bad.error().message().find("fp32, tf32, bf16 or fp16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_even_on_known_values) {
  BOOST_TEST(round_to(precision::bf16, 1.0f) == 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the tie goes to even (1).
  BOOST_TEST(round_to(precision::bf16, 1.0f + 0x1p-8f) == 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  BOOST_TEST(round_to(precision::bf16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
  // Just above the tie rounds up.
  BOOST_TEST(round_to(precision::bf16, 1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
  BOOST_TEST(round_to(precision::bf16, 3.14159265f) == 3.140625f);
  BOOST_TEST(round_to(precision::bf16, -3.14159265f) == -3.140625f);
  // float32's largest finite value rounds past bfloat16's: infinity.
  BOOST_TEST(std::isinf(round_to(precision::bf16, std::numeric_limits<float>::max())));
  // The top 16 bits of 65535 * 2^-15 (0x3FFFFE00): mantissa 0x7F, the
  // dropped half 0xFE00 > 0x8000 rounds up, carrying into the exponent.
  BOOST_TEST(round_to(precision::bf16, from_bits(0x3FFFFE00u)) == 2.0f);
  BOOST_TEST(std::isnan(round_to(precision::bf16, std::numeric_limits<float>::quiet_NaN())));
  BOOST_TEST(std::isinf(round_to(precision::bf16, -INFINITY)));
}

BOOST_AUTO_TEST_CASE(fp16_keeps_65504_and_overflows_65520_to_infinity) {
  BOOST_TEST(round_to(precision::fp16, 65504.0f) == 65504.0f);
  // 65519 is below the midpoint of 65504 and 65536: back to 65504.
  BOOST_TEST(round_to(precision::fp16, 65519.0f) == 65504.0f);
  BOOST_TEST(std::isinf(round_to(precision::fp16, 65520.0f)));
  BOOST_TEST(round_to(precision::fp16, -65520.0f) == -INFINITY);
  BOOST_TEST(std::isinf(round_to(precision::fp16, 1e6f)));
  BOOST_TEST(std::isnan(round_to(precision::fp16, std::numeric_limits<float>::quiet_NaN())));
  BOOST_TEST(std::isnan(round_to(precision::fp16, -std::numeric_limits<float>::quiet_NaN())));
}

BOOST_AUTO_TEST_CASE(fp16_rounds_to_nearest_even_with_ieee_subnormals) {
  BOOST_TEST(round_to(precision::fp16, 1.0f + 0x1p-11f) == 1.0f);             // tie, even
  BOOST_TEST(round_to(precision::fp16, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);  // tie, up
  BOOST_TEST(round_to(precision::fp16, 0.1f) == 0.0999755859375f);
  BOOST_TEST(round_to(precision::fp16, 0x1p-14f) == 0x1p-14f);  // the smallest normal
  BOOST_TEST(round_to(precision::fp16, 0x1p-24f) == 0x1p-24f);  // the smallest subnormal
  BOOST_TEST(round_to(precision::fp16, 0x1p-25f) == 0.0f);      // tie with 0: even (0)
  BOOST_TEST(round_to(precision::fp16, 0x1.8p-24f) == 0x1p-23f);  // tie: even (2 * 2^-24)
  BOOST_TEST(round_to(precision::fp16, 0x1.1p-25f) == 0x1p-24f);  // above the tie: up
  BOOST_TEST(round_to(precision::fp16, 3e-8f) == 0x1p-24f);
  BOOST_TEST(std::signbit(round_to(precision::fp16, -1e-9f)));  // -0, as IEEE rounds it
}

BOOST_AUTO_TEST_CASE(tf32_keeps_ten_mantissa_bits_and_float32_range) {
  BOOST_TEST(round_to(precision::tf32, 1.0f + 0x1p-11f) == 1.0f);
  BOOST_TEST(round_to(precision::tf32, 1.0f + 0x1p-10f) == 1.0f + 0x1p-10f);
  BOOST_TEST(round_to(precision::tf32, from_bits(0x3FFFF000u)) == 2.0f);  // carry
  BOOST_TEST(std::isfinite(round_to(precision::tf32, 1e38f)));
  BOOST_TEST(round_to(precision::fp32, 0.1f) == 0.1f);
}

BOOST_AUTO_TEST_CASE(gemm_ex_is_within_each_precisions_bound_of_float32) {
  // Operands of K terms each rounded with relative error u: each product is
  // off by about 2u, and the sum of K random-signed terms relative to its
  // typical size by about 2u too; 8u leaves room for unlucky outputs near 0
  // (the floor of the relative error is a typical output's size, sqrt(K)).
  const int64_t m = 48, n = 40, k = 64;
  struct bound {
    precision p;
    double u;  // unit roundoff
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      tensor a = random_tensor(ta ? shape_t{k, m} : shape_t{m, k}, 11);
      tensor b = random_tensor(tb ? shape_t{n, k} : shape_t{k, n}, 12);
      tensor want = tensor::zeros({m, n});
      ops::matmul(a, ta, b, tb, want);
      for (bound bd : {bound{precision::tf32, 0x1p-11}, bound{precision::bf16, 0x1p-8},
                       bound{precision::fp16, 0x1p-11}}) {
        tensor got = tensor::zeros({m, n});
        ops::matmul(a, ta, b, tb, got, 1.0f, 0.0f, bd.p);
        const double err = max_error(got.to_vector(), want.to_vector(), std::sqrt(double(k)));
        BOOST_TEST(err <= 8 * bd.u, to_string(bd.p) << (ta ? " A^T" : "") << (tb ? " B^T" : "")
                                                     << ": error " << err);
        BOOST_TEST(err > 0.0, to_string(bd.p) << ": no rounding happened");
        BOOST_TEST(!got.bitwise_equal(want), to_string(bd.p) << " equals float32 bitwise");
      }
      tensor same = tensor::zeros({m, n});
      ops::matmul(a, ta, b, tb, same, 1.0f, 0.0f, precision::fp32);
      BOOST_TEST(same.bitwise_equal(want));
    }
}

BOOST_AUTO_TEST_CASE(gemm_ex_equals_float32_gemm_on_prerounded_operands) {
  // The emulation is exactly: round both operands, then the float32 GEMM.
  tensor a = random_tensor({9, 17}, 21), b = random_tensor({17, 5}, 22);
  for (precision p : {precision::tf32, precision::bf16, precision::fp16}) {
    auto av = a.to_vector(), bv = b.to_vector();
    for (auto& x : av)
      x = round_to(p, x);
    for (auto& x : bv)
      x = round_to(p, x);
    tensor ra = tensor::from_vector(av, {9, 17}), rb = tensor::from_vector(bv, {17, 5});
    tensor want = tensor::full({9, 5}, 0.5f), got = tensor::full({9, 5}, 0.5f);
    ops::matmul(ra, false, rb, false, want, 2.0f, 0.25f);
    ops::matmul(a, false, b, false, got, 2.0f, 0.25f, p);
    BOOST_TEST(got.bitwise_equal(want), to_string(p));
  }
}

BOOST_AUTO_TEST_CASE(gemm_ex_in_fp16_turns_an_operand_past_65504_into_infinity) {
  tensor a = tensor::from_vector({70000.0f, 1.0f}, {1, 2});
  tensor b = tensor::from_vector({1.0f, 1.0f}, {2, 1});
  tensor c = tensor::zeros({1, 1});
  ops::matmul(a, false, b, false, c, 1.0f, 0.0f, precision::bf16);
  BOOST_TEST(std::isfinite(c.to_vector()[0]));  // bf16 has float32's range
  ops::matmul(a, false, b, false, c, 1.0f, 0.0f, precision::fp16);
  BOOST_TEST(std::isinf(c.to_vector()[0]));
}

BOOST_AUTO_TEST_CASE(unscale_and_check_finite_divides_and_flags_inf_and_nan) {
  tensor found = tensor::zeros({1});
  tensor g = tensor::from_vector({2.0f, -4.0f, 8.0f}, {3});
  BOOST_TEST(ops::unscale_and_check_finite(g, 0.5f, found));
  BOOST_TEST((g.to_vector() == std::vector<float>{1.0f, -2.0f, 4.0f}));
  for (float bad : {INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN()}) {
    tensor h = tensor::from_vector({1.0f, bad, 3.0f}, {3});
    BOOST_TEST(!ops::unscale_and_check_finite(h, 0.5f, found));
  }
  // The flag is cleared by every call.
  BOOST_TEST(ops::unscale_and_check_finite(g, 1.0f, found));
}

BOOST_AUTO_TEST_SUITE_END()
