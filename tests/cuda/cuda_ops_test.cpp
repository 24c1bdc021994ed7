// The CUDA kernels against the CPU ones: each op of dtrain::ops runs on host
// tensors and on device copies of them, and the results must agree. Without
// a device (or in a CPU-only build) every test logs why and passes.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "dtrain/tensor/ops.hpp"
#include "dtrain/tensor/tensor.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::device;
using dtrain::shape_t;
using dtrain::tensor;
using dtrain::testing::max_relative_error;
using dtrain::testing::random_tensor;
namespace cuda = dtrain::cuda;
namespace ops = dtrain::ops;

constexpr double gemm_tolerance = 1e-4;
constexpr double elementwise_tolerance = 1e-5;
// A sum over hundreds of rows is a reduction like a GEMM's inner product:
// the device adds in another order than the CPU's running sum (on an H100,
// 1000 rows differed by 1.3e-5).
constexpr double reduction_tolerance = gemm_tolerance;


tensor on_gpu(const tensor& t) { return t.to(device::cuda()); }

/// Waits for the device and checks that no kernel failed.
void expect_synced(const std::string& what) {
  dtrain::status s = cuda::synchronize(what.c_str());
  BOOST_TEST(s.is_ok(), what << ": " << s.to_string());
}

/// The device result against the host reference, element by element.
void expect_close(const tensor& gpu, const tensor& cpu, double tolerance,
                  const std::string& what) {
  expect_synced(what);
  BOOST_TEST(gpu.is_cuda(), what << " is not on the device");
  BOOST_TEST((gpu.shape() == cpu.shape()), what << ": shapes differ");
  double err = max_relative_error(gpu.to_vector(), cpu.to_vector());
  BOOST_TEST_MESSAGE(what << ": max relative error " << err);
  BOOST_TEST(err <= tolerance, what << ": max relative error " << err << " > " << tolerance);
}

void expect_close(double gpu, double cpu, double tolerance, const std::string& what) {
  double err = std::fabs(gpu - cpu) / std::fmax(1.0, std::fabs(cpu));
  BOOST_TEST(err <= tolerance, what << ": " << gpu << " vs " << cpu);
}

/// Class indices in [0, cols), stored as floats the way the loaders do.
tensor random_labels(int64_t rows, int64_t cols, uint64_t seed) {
  dtrain::rng gen(seed);
  std::vector<float> labels(static_cast<size_t>(rows));
  for (auto& l : labels)
    l = static_cast<float>(gen.below(static_cast<uint64_t>(cols)));
  return tensor::from_vector(labels, {rows});
}

std::string dims(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
         (ta ? " A^T" : " A") + (tb ? " B^T" : " B");
}

/// Runs c = alpha op(a) op(b) + beta c on both devices from the same random
/// operands and compares.
void check_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta,
                uint64_t seed) {
  tensor a = random_tensor(ta ? shape_t{k, m} : shape_t{m, k}, seed);
  tensor b = random_tensor(tb ? shape_t{n, k} : shape_t{k, n}, seed + 1);
  tensor c = random_tensor({m, n}, seed + 2);
  tensor ga = on_gpu(a), gb = on_gpu(b), gc = on_gpu(c);
  ops::matmul(a, ta, b, tb, c, alpha, beta);
  ops::matmul(ga, ta, gb, tb, gc, alpha, beta);
  expect_close(gc, c, gemm_tolerance, "gemm " + dims(m, n, k, ta, tb));
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_ops)

BOOST_AUTO_TEST_CASE(device_is_named_and_selectable) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  std::string name = cuda::device_name(0);
  BOOST_TEST_MESSAGE("cuda:0 is " << name);
  BOOST_TEST(name.find("(sm_") != std::string::npos, name);
  BOOST_TEST(cuda::set_device(0).is_ok());
  dtrain::status bad = cuda::set_device(cuda::device_count());
  BOOST_TEST(!bad.is_ok());
}

BOOST_AUTO_TEST_CASE(tensor_round_trip_through_the_device_is_exact) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  tensor host = random_tensor({123, 45}, 1);
  std::vector<float> values = host.to_vector();
  tensor dev = tensor::from_vector(values, {123, 45}, device::cuda());
  BOOST_TEST(dev.is_cuda());
  BOOST_TEST((dev.to_vector() == values));
  BOOST_TEST((on_gpu(host).to_vector() == values));
  BOOST_TEST(dev.clone().bitwise_equal(host)); // device to device
  tensor rows = dev.rows(10, 20).to(device::cpu());
  BOOST_TEST((rows.to_vector() == host.rows(10, 20).to_vector()));
  std::vector<float> zeros = tensor::zeros({1000}, device::cuda()).to_vector();
  BOOST_TEST((zeros == std::vector<float>(1000, 0.0f)));
}

BOOST_AUTO_TEST_CASE(gemm_matches_cpu_in_all_transpose_combinations) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t sizes[][3] = {{37, 53, 29}, {1, 1, 1}, {64, 10, 1024}, {128, 129, 130}};
  uint64_t seed = 100;
  for (const auto& s : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_gemm(s[0], s[1], s[2], ta, tb, 1.0f, 0.0f, seed += 3);
        check_gemm(s[0], s[1], s[2], ta, tb, 0.75f, 0.5f, seed += 3);
      }
}

BOOST_AUTO_TEST_CASE(gemm_matches_cpu_at_mlp_sizes) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  check_gemm(256, 1024, 784, false, false, 1.0f, 0.0f, 200); // forward: x w
  check_gemm(784, 1024, 256, true, false, 1.0f, 1.0f, 210);  // dw += x^T dy
  check_gemm(256, 784, 1024, false, true, 1.0f, 0.0f, 220);  // dx = dy w^T
}

BOOST_AUTO_TEST_CASE(gemm_with_beta_zero_ignores_what_c_held) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  tensor a = random_tensor({37, 29}, 300), b = random_tensor({29, 53}, 301);
  tensor c = tensor::zeros({37, 53});
  tensor gc = tensor::full({37, 53}, NAN, device::cuda());
  ops::matmul(a, false, b, false, c);
  ops::matmul(on_gpu(a), false, on_gpu(b), false, gc);
  expect_close(gc, c, gemm_tolerance, "gemm over NaN with beta 0");
}

BOOST_AUTO_TEST_CASE(gemm_with_empty_operands_scales_or_keeps_c) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  // k == 0: C = beta * C, checked against the definition.
  tensor c = random_tensor({5, 7}, 310);
  tensor gc = on_gpu(c);
  tensor ga = tensor::empty({5, 0}, device::cuda()), gb = tensor::empty({0, 7}, device::cuda());
  ops::matmul(ga, false, gb, false, gc, 1.0f, 0.5f);
  tensor half = c.clone();
  ops::scale(half, 0.5f);
  expect_close(gc, half, 0.0, "gemm with k == 0, beta 0.5");
  ops::matmul(ga, false, gb, false, gc, 1.0f, 0.0f);
  expect_close(gc, tensor::zeros({5, 7}), 0.0, "gemm with k == 0, beta 0");
  // m == 0: nothing to compute, and nothing must fail.
  tensor gm = tensor::empty({0, 3}, device::cuda());
  ops::matmul(tensor::empty({0, 4}, device::cuda()), false, on_gpu(random_tensor({4, 3}, 311)),
              false, gm);
  expect_synced("gemm with m == 0");
}

BOOST_AUTO_TEST_CASE(add_bias_and_sum_rows_match_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t shapes[][2] = {{256, 1000}, {1000, 10}, {3, 1}, {7, 33}};
  uint64_t seed = 400;
  for (const auto& s : shapes) {
    std::string what = std::to_string(s[0]) + "x" + std::to_string(s[1]);
    tensor y = random_tensor({s[0], s[1]}, ++seed), bias = random_tensor({s[1]}, ++seed);
    tensor gy = on_gpu(y);
    ops::add_bias(y, bias);
    ops::add_bias(gy, on_gpu(bias));
    expect_close(gy, y, elementwise_tolerance, "add_bias " + what);

    tensor x = random_tensor({s[0], s[1]}, ++seed), gx = on_gpu(x);
    tensor out = tensor::zeros({s[1]});
    tensor gout = tensor::full({s[1]}, NAN, device::cuda()); // beta 0 must not read it
    ops::sum_rows(x, out, 0.0f);
    ops::sum_rows(gx, gout, 0.0f);
    expect_close(gout, out, reduction_tolerance, "sum_rows beta 0 " + what);
    tensor acc = random_tensor({s[1]}, ++seed), gacc = on_gpu(acc);
    ops::sum_rows(x, acc, 1.0f);
    ops::sum_rows(gx, gacc, 1.0f);
    expect_close(gacc, acc, reduction_tolerance, "sum_rows beta 1 " + what);
    ops::sum_rows(x, acc, 0.5f);
    ops::sum_rows(gx, gacc, 0.5f);
    expect_close(gacc, acc, reduction_tolerance, "sum_rows beta 0.5 " + what);
  }
}

BOOST_AUTO_TEST_CASE(activations_match_cpu_forward_and_backward) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  uint64_t seed = 500;
  for (auto kind : {ops::activation::relu, ops::activation::gelu, ops::activation::tanh}) {
    std::string name = ops::to_string(kind);
    tensor x = random_tensor({333, 77}, ++seed, 2.0f), dy = random_tensor({333, 77}, ++seed);
    tensor y = tensor::empty(x.shape()), dx = tensor::empty(x.shape());
    tensor gx = on_gpu(x), gdy = on_gpu(dy);
    tensor gy = tensor::empty(x.shape(), device::cuda());
    tensor gdx = tensor::empty(x.shape(), device::cuda());
    ops::activation_forward(kind, x, y);
    ops::activation_forward(kind, gx, gy);
    expect_close(gy, y, elementwise_tolerance, name + " forward");
    ops::activation_backward(kind, x, y, dy, dx);
    ops::activation_backward(kind, gx, gy, gdy, gdx);
    expect_close(gdx, dx, elementwise_tolerance, name + " backward");
    ops::activation_forward(kind, gx, gx); // in place, as ops.hpp allows
    expect_close(gx, y, elementwise_tolerance, name + " forward in place");
  }
}

BOOST_AUTO_TEST_CASE(dropout_masks_are_bitwise_identical_to_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t n = 1000003; // odd, and more than one grid of threads
  uint64_t seed = 600;
  for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
    std::string what = "dropout p=" + std::to_string(p);
    tensor x = random_tensor({n}, ++seed), dy = random_tensor({n}, ++seed);
    tensor y = tensor::empty({n}), mask = tensor::empty({n});
    tensor gy = tensor::empty({n}, device::cuda()), gmask = tensor::empty({n}, device::cuda());
    ops::dropout_forward(x, y, mask, p, seed);
    ops::dropout_forward(on_gpu(x), gy, gmask, p, seed);
    expect_synced(what);
    BOOST_TEST(gmask.bitwise_equal(mask), what << ": masks differ");
    expect_close(gy, y, 0.0, what + " output");
    double kept = 0;
    for (float m : gmask.to_vector())
      kept += m != 0.0f ? 1 : 0;
    BOOST_TEST(std::fabs(kept / n - (1.0 - p)) < 0.01, what << ": kept " << kept / n);

    tensor dx = tensor::empty({n}), gdx = tensor::empty({n}, device::cuda());
    ops::multiply(dy, mask, dx);
    ops::multiply(on_gpu(dy), gmask, gdx);
    expect_close(gdx, dx, 0.0, what + " backward");
  }
}

BOOST_AUTO_TEST_CASE(cross_entropy_matches_cpu_with_gradients) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t shapes[][2] = {{256, 10}, {64, 1000}, {17, 1024}, {5, 3}, {3, 1500}, {2, 33}};
  uint64_t seed = 700;
  for (const auto& s : shapes) {
    int64_t rows = s[0], cols = s[1];
    std::string what = "cross entropy " + std::to_string(rows) + "x" + std::to_string(cols);
    tensor logits = random_tensor({rows, cols}, ++seed, 3.0f);
    tensor labels = random_labels(rows, cols, ++seed);
    tensor grad = tensor::empty({rows, cols}), row_loss = tensor::empty({rows});
    tensor glogits = on_gpu(logits), glabels = on_gpu(labels);
    tensor ggrad = tensor::empty({rows, cols}, device::cuda());
    tensor grow_loss = tensor::empty({rows}, device::cuda());
    float loss = ops::softmax_cross_entropy(logits, labels, &grad, row_loss);
    float gloss = ops::softmax_cross_entropy(glogits, glabels, &ggrad, grow_loss);
    expect_close(gloss, loss, elementwise_tolerance, what + " loss");
    expect_close(grow_loss, row_loss, elementwise_tolerance, what + " row losses");
    expect_close(ggrad, grad, elementwise_tolerance, what + " gradient");
    float gloss_only = ops::softmax_cross_entropy(glogits, glabels, nullptr, grow_loss);
    expect_close(gloss_only, loss, elementwise_tolerance, what + " loss without gradient");
  }
}

BOOST_AUTO_TEST_CASE(cross_entropy_with_a_bad_label_gives_a_nan_row) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t rows = 5, cols = 10;
  tensor logits = on_gpu(random_tensor({rows, cols}, 800));
  tensor labels = tensor::from_vector({1.0f, -1.0f, 10.0f, 3.0f, NAN}, {rows}, device::cuda());
  tensor grad = tensor::empty({rows, cols}, device::cuda());
  tensor row_loss = tensor::empty({rows}, device::cuda());
  float loss = ops::softmax_cross_entropy(logits, labels, &grad, row_loss);
  BOOST_TEST(std::isnan(loss));
  std::vector<float> losses = row_loss.to_vector(), g = grad.to_vector();
  for (int64_t r = 0; r < rows; ++r) {
    bool bad = r == 1 || r == 2 || r == 4;
    BOOST_TEST(std::isnan(losses[r]) == bad, "row " << r << " loss " << losses[r]);
    for (int64_t j = 0; j < cols; ++j)
      BOOST_TEST(std::isnan(g[r * cols + j]) == bad, "grad[" << r << ", " << j << "]");
  }
}

BOOST_AUTO_TEST_CASE(mse_matches_cpu_with_gradients) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t shapes[][2] = {{256, 10}, {7, 1025}, {1, 1}};
  uint64_t seed = 900;
  for (const auto& s : shapes) {
    std::string what = "mse " + std::to_string(s[0]) + "x" + std::to_string(s[1]);
    tensor pred = random_tensor({s[0], s[1]}, ++seed), target = random_tensor({s[0], s[1]}, ++seed);
    tensor grad = tensor::empty(pred.shape()), row_loss = tensor::empty({s[0]});
    tensor ggrad = tensor::empty(pred.shape(), device::cuda());
    tensor grow_loss = tensor::empty({s[0]}, device::cuda());
    float loss = ops::mse(pred, target, &grad, row_loss);
    float gloss = ops::mse(on_gpu(pred), on_gpu(target), &ggrad, grow_loss);
    expect_close(gloss, loss, elementwise_tolerance, what + " loss");
    expect_close(grow_loss, row_loss, elementwise_tolerance, what + " row losses");
    expect_close(ggrad, grad, elementwise_tolerance, what + " gradient");
  }
}

BOOST_AUTO_TEST_CASE(count_correct_matches_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t shapes[][2] = {{300, 10}, {50, 1000}, {4, 1}};
  uint64_t seed = 1000;
  for (const auto& s : shapes) {
    int64_t rows = s[0], cols = s[1];
    std::string what = "count_correct " + std::to_string(rows) + "x" + std::to_string(cols);
    tensor logits = random_tensor({rows, cols}, ++seed);
    // Half the labels at the row's maximum, so that both outcomes occur.
    std::vector<float> x = logits.to_vector(), labels = random_labels(rows, cols, ++seed).to_vector();
    for (int64_t r = 0; r < rows; r += 2) {
      int64_t best = 0;
      for (int64_t j = 1; j < cols; ++j)
        if (x[r * cols + j] > x[r * cols + best])
          best = j;
      labels[r] = static_cast<float>(best);
    }
    tensor lab = tensor::from_vector(labels, {rows});
    tensor match = tensor::empty({rows}), gmatch = tensor::empty({rows}, device::cuda());
    int64_t count = ops::count_correct(logits, lab, match);
    int64_t gcount = ops::count_correct(on_gpu(logits), on_gpu(lab), gmatch);
    BOOST_TEST(gcount == count, what);
    BOOST_TEST(gcount >= (rows + 1) / 2, what);
    expect_close(gmatch, match, 0.0, what + " rows");
  }
}

BOOST_AUTO_TEST_CASE(count_correct_takes_the_first_maximum) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t cols = 300;
  std::vector<float> x(4 * cols, 0.0f);
  x[0 * cols + 37] = x[0 * cols + 290] = 5.0f; // ties far apart: the first wins
  x[1 * cols + 37] = x[1 * cols + 290] = 5.0f;
  for (int64_t j = 0; j < cols; ++j)
    x[3 * cols + j] = -INFINITY; // all equal: column 0 is the first maximum
  // Row 2 is all zeros, so its first maximum is column 0 too.
  tensor logits = tensor::from_vector(x, {4, cols}, device::cuda());
  tensor labels = tensor::from_vector({37.0f, 290.0f, 0.0f, 0.0f}, {4}, device::cuda());
  tensor match = tensor::empty({4}, device::cuda());
  BOOST_TEST(ops::count_correct(logits, labels, match) == 3);
  BOOST_TEST((match.to_vector() == std::vector<float>{1.0f, 0.0f, 1.0f, 1.0f}));
}

BOOST_AUTO_TEST_CASE(fill_scale_axpy_and_multiply_match_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  const int64_t n = (1 << 20) + 7;
  tensor x = random_tensor({n}, 1100), y = random_tensor({n}, 1101);
  tensor gx = on_gpu(x), gy = on_gpu(y);
  tensor f = tensor::empty({n}, device::cuda());
  ops::fill(f, 2.5f);
  expect_close(f, tensor::full({n}, 2.5f), 0.0, "fill");
  ops::scale(x, 0.3f);
  ops::scale(gx, 0.3f);
  expect_close(gx, x, elementwise_tolerance, "scale");
  ops::axpy(-1.7f, x, y);
  ops::axpy(-1.7f, gx, gy);
  expect_close(gy, y, elementwise_tolerance, "axpy");
  tensor out = tensor::empty({n}), gout = tensor::empty({n}, device::cuda());
  ops::multiply(x, y, out);
  ops::multiply(gx, gy, gout);
  expect_close(gout, out, elementwise_tolerance, "multiply");
  expect_close(ops::sum(gout), ops::sum(out), elementwise_tolerance, "sum");
}

BOOST_AUTO_TEST_CASE(empty_tensors_launch_nothing) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  tensor e = tensor::empty({0}, device::cuda()), e2 = tensor::empty({0}, device::cuda());
  ops::fill(e, 1.0f);
  ops::scale(e, 2.0f);
  ops::axpy(1.0f, e, e2);
  ops::multiply(e, e, e2);
  ops::activation_forward(ops::activation::gelu, e, e2);
  expect_synced("ops on empty tensors");
}

BOOST_AUTO_TEST_CASE(sgd_matches_cpu_over_three_steps) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  struct sgd_case {
    const char* name;
    dtrain::sgd_hyper h;
  };
  const sgd_case cases[] = {
      {"momentum+nesterov+weight decay", {0.05f, 0.9f, 0.0f, 1e-2f, true, true}},
      {"momentum+dampening+weight decay", {0.05f, 0.9f, 0.1f, 5e-4f, false, true}},
      {"plain with weight decay", {0.1f, 0.0f, 0.0f, 1e-3f, false, true}},
  };
  uint64_t seed = 1200;
  for (const auto& c : cases) {
    const shape_t shape{1000, 37};
    tensor p = random_tensor(shape, ++seed), buf = tensor::zeros(shape);
    tensor gp = on_gpu(p), gbuf = on_gpu(buf);
    bool with_buf = c.h.momentum != 0.0f;
    for (int step = 0; step < 3; ++step) {
      std::string what = std::string("sgd ") + c.name + " step " + std::to_string(step + 1);
      dtrain::sgd_hyper h = c.h;
      h.first_step = step == 0;
      tensor g = random_tensor(shape, ++seed);
      ops::sgd_update(p, g, with_buf ? &buf : nullptr, h);
      ops::sgd_update(gp, on_gpu(g), with_buf ? &gbuf : nullptr, h);
      expect_close(gp, p, elementwise_tolerance, what + " params");
      expect_close(gbuf, buf, elementwise_tolerance, what + " momentum");
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_and_adamw_match_cpu_over_three_steps) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  uint64_t seed = 1300;
  for (bool decoupled : {false, true}) {
    const shape_t shape{513, 129};
    tensor p = random_tensor(shape, ++seed);
    tensor m = tensor::zeros(shape), v = tensor::zeros(shape);
    tensor gp = on_gpu(p), gm = on_gpu(m), gv = on_gpu(v);
    dtrain::adam_hyper h;
    h.lr = 1e-2f;
    h.weight_decay = 1e-2f;
    h.decoupled = decoupled;
    for (int step = 1; step <= 3; ++step) {
      std::string what = std::string(decoupled ? "adamw" : "adam") + " step " +
                         std::to_string(step);
      h.bias_correction1 = 1.0f - std::pow(h.beta1, static_cast<float>(step));
      h.bias_correction2 = 1.0f - std::pow(h.beta2, static_cast<float>(step));
      tensor g = random_tensor(shape, ++seed);
      ops::adam_update(p, g, m, v, h);
      ops::adam_update(gp, on_gpu(g), gm, gv, h);
      expect_close(gp, p, elementwise_tolerance, what + " params");
      expect_close(gm, m, elementwise_tolerance, what + " first moment");
      expect_close(gv, v, elementwise_tolerance, what + " second moment");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

