// cuBLAS's reduced-precision GEMM compute (gemm_ex: TF32, BF16, FP16 tensor
// cores on float32 buffers) against the CPU's emulation of the same
// rounding, and against float32 within each precision's error bound.
// Without a device (or in a CPU-only build) every test logs why and passes.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "dtrain/cuda/runtime.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/tensor/ops.hpp"
#include "dtrain/tensor/precision.hpp"
#include "support/test_util.hpp"

namespace {

using namespace dtrain;
using dtrain::testing::random_tensor;

// Largest |a - b| / max(|b|, floor): relative, without blowing up near 0.
double max_error(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::fmax(worst, std::fabs(double(a[i]) - b[i]) / std::fmax(std::fabs(b[i]), floor));
  return worst;
}

struct case_bound {
  precision p;
  double u;  // unit roundoff of the operands
};

const case_bound reduced[] = {{precision::tf32, 0x1p-11}, {precision::bf16, 0x1p-8},
                              {precision::fp16, 0x1p-11}};

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_mixed_precision)

BOOST_AUTO_TEST_CASE(gemm_ex_matches_the_cpu_emulation_and_stays_within_float32s_bound) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t sizes[][3] = {{37, 53, 29}, {256, 1024, 784}, {784, 256, 1024}};
  uint64_t seed = 300;
  for (const auto& s : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int64_t m = s[0], n = s[1], k = s[2];
        tensor a = random_tensor(ta ? shape_t{k, m} : shape_t{m, k}, seed += 2);
        tensor b = random_tensor(tb ? shape_t{n, k} : shape_t{k, n}, seed + 1);
        tensor ga = a.to(device::cuda()), gb = b.to(device::cuda());
        tensor want32 = tensor::zeros({m, n});
        ops::matmul(a, ta, b, tb, want32);
        const double floor = std::sqrt(double(k));
        for (case_bound c : reduced) {
          tensor emulated = tensor::zeros({m, n});
          ops::matmul(a, ta, b, tb, emulated, 1.0f, 0.0f, c.p);
          tensor gc = tensor::zeros({m, n}, device::cuda());
          ops::matmul(ga, ta, gb, tb, gc, 1.0f, 0.0f, c.p);
          BOOST_TEST_REQUIRE(cuda::synchronize("gemm_ex").is_ok());
          const std::string what = std::string(to_string(c.p)) + " " + std::to_string(m) + "x" +
                                   std::to_string(n) + "x" + std::to_string(k) +
                                   (ta ? " A^T" : "") + (tb ? " B^T" : "");
          auto got = gc.to_vector();
          // Same rounded operands, float32 accumulation in another order.
          const double vs_emulation = max_error(got, emulated.to_vector(), floor);
          BOOST_TEST(vs_emulation <= 2 * c.u, what << ": vs the CPU emulation " << vs_emulation);
          const double vs_fp32 = max_error(got, want32.to_vector(), floor);
          BOOST_TEST(vs_fp32 <= 8 * c.u, what << ": vs float32 " << vs_fp32);
          BOOST_TEST_MESSAGE(what << ": error vs float32 " << vs_fp32 << ", vs emulation "
                                  << vs_emulation);
        }
      }
}

BOOST_AUTO_TEST_CASE(an_mlp_step_in_bf16_and_fp16_matches_the_cpu_emulation) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  for (precision p : {precision::bf16, precision::fp16, precision::tf32}) {
    std::vector<std::vector<float>> grads;
    for (device where : {device::cpu(), device::cuda()}) {
      nn::model_options mo{64, where, 9};
      mo.compute = p;
      auto m = nn::model::create(nn::make_mlp({64, {128, 64}, 10, ops::activation::relu, 0.0f}),
                                 mo)
                   .value();
      tensor x = random_tensor({32, 64}, 17).to(where);
      std::vector<float> labels(32);
      for (size_t i = 0; i < labels.size(); ++i)
        labels[i] = static_cast<float>(i % 10);
      tensor y = tensor::from_vector(labels, {32}).to(where);
      nn::cross_entropy_loss loss;
      const tensor* out = m->forward(x, true).value();
      BOOST_TEST_REQUIRE(loss.compute(*out, y, true).is_ok());
      BOOST_TEST_REQUIRE(m->backward(loss.grad(), false).is_ok());
      grads.push_back(m->gradients().to_vector());
    }
    const double err = max_error(grads[1], grads[0], 1e-2);
    BOOST_TEST(err <= 0.05, to_string(p) << ": gradients differ by " << err);
  }
}

BOOST_AUTO_TEST_CASE(fp16_compute_turns_an_operand_past_65504_into_infinity) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  tensor a = tensor::from_vector({70000.0f, 1.0f}, {1, 2}, device::cuda());
  tensor b = tensor::from_vector({1.0f, 1.0f}, {2, 1}, device::cuda());
  tensor c = tensor::zeros({1, 1}, device::cuda());
  ops::matmul(a, false, b, false, c, 1.0f, 0.0f, precision::fp16);
  const float v = c.to_vector()[0];
  BOOST_TEST_MESSAGE("fp16 compute of 70000 + 1 gives " << v);
  BOOST_TEST(!std::isfinite(v), "fp16 compute gave " << v << ": the operand was not rounded to half");
}

BOOST_AUTO_TEST_CASE(unscale_and_check_finite_matches_the_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  tensor host = random_tensor({100003}, 31, 1000.0f);
  tensor dev = host.to(device::cuda());
  tensor found = tensor::zeros({1}), dev_found = tensor::zeros({1}, device::cuda());
  BOOST_TEST(ops::unscale_and_check_finite(host, 0x1p-16f, found));
  BOOST_TEST(ops::unscale_and_check_finite(dev, 0x1p-16f, dev_found));
  BOOST_TEST(dev.to(device::cpu()).bitwise_equal(host));  // a power of two: exact
  std::vector<float> v = host.to_vector();
  v[77777] = NAN;
  tensor bad = tensor::from_vector(v, {100003}, device::cuda());
  BOOST_TEST(!ops::unscale_and_check_finite(bad, 1.0f, dev_found));
  v[77777] = -INFINITY;
  bad = tensor::from_vector(v, {100003}, device::cuda());
  BOOST_TEST(!ops::unscale_and_check_finite(bad, 1.0f, dev_found));
  BOOST_TEST(ops::unscale_and_check_finite(dev, 1.0f, dev_found));  // cleared again
}

BOOST_AUTO_TEST_SUITE_END()
