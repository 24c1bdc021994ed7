// The CUDA layers against the CPU ones: each layer (conv2d, the pools, the
// norms, embedding) is built twice, bound to the same random parameters,
// gradients and buffers on the host and on the device, and run forward and
// backward on the same random inputs; outputs, input gradients, parameter
// gradients and running statistics must agree. Then a small CNN model end
// to end. Without a device (or in a CPU-only build) every test logs why and
// passes.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/cuda/runtime.hpp"
#include "dtrain/nn/build.hpp"
#include "dtrain/nn/conv.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/nn/pooling.hpp"
#include "dtrain/tensor/ops.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::device;
using dtrain::shape_t;
using dtrain::tensor;
using dtrain::testing::max_relative_error;
using dtrain::testing::random_tensor;
namespace cuda = dtrain::cuda;
namespace nn = dtrain::nn;

constexpr double tolerance = 1e-4;

tensor on_gpu(const tensor& t) { return t.to(device::cuda()); }

/// The device result against the host reference. The reference must hold
/// a nonzero value: agreeing on zeros proves nothing.
void expect_close(const tensor& gpu, const tensor& cpu, const std::string& what) {
  dtrain::status s = cuda::synchronize(what.c_str());
  BOOST_TEST(s.is_ok(), what << ": " << s.to_string());
  BOOST_REQUIRE_MESSAGE(gpu.defined() && cpu.defined(), what << ": undefined");
  BOOST_TEST(gpu.is_cuda(), what << " is not on the device");
  BOOST_TEST((gpu.shape() == cpu.shape()), what << ": shapes differ");
  std::vector<float> ref = cpu.to_vector();
  bool nonzero = false;
  for (float v : ref)
    nonzero = nonzero || v != 0.0f;
  BOOST_TEST(nonzero, what << ": the CPU reference is all zeros");
  double err = max_relative_error(gpu.to_vector(), ref);
  BOOST_TEST_MESSAGE(what << ": max relative error " << err);
  BOOST_TEST(err <= tolerance, what << ": max relative error " << err << " > " << tolerance);
}

/// One layer on each device, bound to the same values.
struct layer_pair {
  std::unique_ptr<nn::module> cpu, gpu;
  std::vector<tensor> cpu_params, cpu_grads, cpu_buffers;
  std::vector<tensor> gpu_params, gpu_grads, gpu_buffers;
};

layer_pair bind_pair(const std::function<std::unique_ptr<nn::module>()>& make, uint64_t seed) {
  layer_pair p{make(), make(), {}, {}, {}, {}, {}, {}};
  for (auto& spec : p.cpu->parameter_specs()) {
    p.cpu_params.push_back(random_tensor(spec.shape, seed++, 0.5f));
    p.cpu_grads.push_back(random_tensor(spec.shape, seed++));
  }
  for (auto& spec : p.cpu->buffer_specs()) {
    // Running statistics near their start (running_var stays positive).
    tensor b = random_tensor(spec.shape, seed++, 0.1f);
    for (int64_t i = 0; i < b.numel(); ++i)
      b.data()[i] += spec.initial;
    p.cpu_buffers.push_back(b);
  }
  for (auto& t : p.cpu_params)
    p.gpu_params.push_back(on_gpu(t));
  for (auto& t : p.cpu_grads)
    p.gpu_grads.push_back(on_gpu(t));
  for (auto& t : p.cpu_buffers)
    p.gpu_buffers.push_back(on_gpu(t));
  p.cpu->bind(p.cpu_params, p.cpu_grads);
  p.gpu->bind(p.gpu_params, p.gpu_grads);
  p.cpu->bind_buffers(p.cpu_buffers);
  p.gpu->bind_buffers(p.gpu_buffers);
  return p;
}

struct run_options {
  int64_t batch = 3;
  bool training = true;
  /// The input; random normal values when empty.
  std::vector<float> input;
  /// A reducer for both layers (synchronized batch norm).
  nn::statistics_reducer reduce;
};

/// Two passes on each device: the first backward overwrites the
/// gradients, the second adds to them; compares everything after each.
void compare_layer(const std::function<std::unique_ptr<nn::module>()>& make, int64_t in,
                   const run_options& o, uint64_t seed) {
  layer_pair p = bind_pair(make, seed);
  const std::string name = p.cpu->describe() + " batch " + std::to_string(o.batch);
  BOOST_TEST_CONTEXT(name) {
    auto out = p.cpu->output_features(in);
    BOOST_REQUIRE(out.is_ok());
    if (o.reduce) {
      p.cpu->set_statistics_reducer(o.reduce);
      p.gpu->set_statistics_reducer(o.reduce);
    }
    for (int pass = 0; pass < 2; ++pass) {
      const std::string at = name + " pass " + std::to_string(pass);
      tensor x = o.input.empty() ? random_tensor({o.batch, in}, seed + 100 + pass)
                                 : tensor::from_vector(o.input, {o.batch, in});
      tensor gx = on_gpu(x);
      nn::forward_context ctx{o.training, 7};
      const tensor& y = p.cpu->forward(x, ctx);
      const tensor& gy = p.gpu->forward(gx, ctx);
      BOOST_REQUIRE(p.cpu->last_status().is_ok());
      BOOST_REQUIRE(p.gpu->last_status().is_ok());
      expect_close(gy, y, at + ": output");
      if (!o.training)
        return;
      tensor dy = random_tensor({o.batch, *out}, seed + 200 + pass);
      tensor gdy = on_gpu(dy);
      nn::backward_context bctx{true, pass == 1};
      const tensor& dx = p.cpu->backward(dy, bctx);
      const tensor& gdx = p.gpu->backward(gdy, bctx);
      BOOST_REQUIRE(p.gpu->last_status().is_ok());
      if (o.input.empty())  // an embedding's indices have no gradient
        expect_close(gdx, dx, at + ": input gradient");
      for (size_t i = 0; i < p.cpu_grads.size(); ++i)
        expect_close(p.gpu_grads[i], p.cpu_grads[i],
                     at + ": gradient of parameter " + std::to_string(i));
      for (size_t i = 0; i < p.cpu_buffers.size(); ++i)
        expect_close(p.gpu_buffers[i], p.cpu_buffers[i], at + ": buffer " + std::to_string(i));
    }
  }
}

std::function<std::unique_ptr<nn::module>()> conv(nn::image_shape in, int64_t out,
                                                  nn::conv2d_options o) {
  return [=] { return std::make_unique<nn::conv2d>(in, out, o); };
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_layers)

BOOST_AUTO_TEST_CASE(conv2d_matches_cpu_with_stride_padding_dilation_and_groups) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  using opts = nn::conv2d_options;
  run_options batch3, batch1;
  batch1.batch = 1;
  compare_layer(conv({3, 9, 7}, 4, opts::square(3, 1, 1)), 3 * 9 * 7, batch3, 1);
  compare_layer(conv({3, 9, 7}, 4, opts::square(3, 1, 1)), 3 * 9 * 7, batch1, 2);
  compare_layer(conv({4, 9, 7}, 6, opts::square(3, 2, 1, 1, 2)), 4 * 9 * 7, batch3, 3);
  compare_layer(conv({2, 11, 10}, 3, opts::square(3, 1, 2, 2)), 2 * 11 * 10, batch3, 4);
  compare_layer(conv({6, 8, 9}, 6, opts::square(3, 2, 2, 2, 3, false)), 6 * 8 * 9, batch3, 5);
  compare_layer(conv({3, 5, 5}, 4, opts::square(1)), 3 * 5 * 5, batch3, 6);  // 1x1
  opts uneven;
  uneven.kernel_h = 2;
  uneven.kernel_w = 3;
  uneven.stride_h = 2;
  uneven.pad_w = 1;
  uneven.dilation_w = 2;
  compare_layer(conv({2, 7, 9}, 5, uneven), 2 * 7 * 9, batch3, 7);
}

BOOST_AUTO_TEST_CASE(pools_match_cpu_including_padding_and_the_global_average) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  run_options batch3, batch1;
  batch1.batch = 1;
  auto pool = [](std::unique_ptr<nn::pool2d> (*make)(nn::image_shape, int64_t, int64_t, int64_t),
                 nn::image_shape in, int64_t k, int64_t s, int64_t p) {
    return [=]() -> std::unique_ptr<nn::module> { return make(in, k, s, p); };
  };
  compare_layer(pool(nn::max_pool2d, {3, 9, 8}, 3, 2, 1), 3 * 9 * 8, batch3, 10);
  compare_layer(pool(nn::max_pool2d, {2, 7, 7}, 2, 0, 0), 2 * 7 * 7, batch1, 11);
  compare_layer(pool(nn::max_pool2d, {2, 7, 7}, 3, 1, 1), 2 * 7 * 7, batch3, 12);  // overlapping
  compare_layer(pool(nn::avg_pool2d, {3, 9, 8}, 3, 2, 1), 3 * 9 * 8, batch3, 13);
  compare_layer(pool(nn::avg_pool2d, {2, 7, 7}, 2, 0, 0), 2 * 7 * 7, batch1, 14);
  compare_layer([] { return nn::global_avg_pool({5, 6, 7}); }, 5 * 6 * 7, batch3, 15);
}

BOOST_AUTO_TEST_CASE(max_pool_lets_the_first_nan_win_as_the_cpu_does) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto cpu = nn::max_pool2d({1, 4, 4}, 2);
  auto gpu = nn::max_pool2d({1, 4, 4}, 2);
  tensor x = random_tensor({2, 16}, 20);
  x.data()[5] = NAN;   // sample 0, window (0, 0)
  x.data()[16 + 15] = NAN;  // sample 1, window (1, 1)
  tensor gx = on_gpu(x);
  const tensor& y = cpu->forward(x, {});
  const tensor& gy = gpu->forward(gx, {});
  std::vector<float> a = y.to_vector(), b = gy.to_vector();
  for (size_t i = 0; i < a.size(); ++i)
    BOOST_TEST((std::isnan(a[i]) ? std::isnan(b[i]) : a[i] == b[i]), "output " << i);
  tensor dy = random_tensor({2, 4}, 21);
  expect_close(gpu->backward(on_gpu(dy), {}), cpu->backward(dy, {}), "max pool dx with NaN");
}

BOOST_AUTO_TEST_CASE(batch_norm_matches_cpu_in_training_evaluation_and_synchronized) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  auto bn2d = [] { return nn::build::batch_norm2d(3, 5, 7); };
  auto bn1d = [] { return nn::build::batch_norm1d(6); };
  run_options train, eval, batch1, synced;
  train.batch = 4;
  eval.batch = 4;
  eval.training = false;
  batch1.batch = 1;  // 35 values per channel: a valid batch for BatchNorm2d
  compare_layer(bn2d, 3 * 5 * 7, train, 30);
  compare_layer(bn2d, 3 * 5 * 7, eval, 31);
  compare_layer(bn2d, 3 * 5 * 7, batch1, 32);
  train.batch = 5;
  compare_layer(bn1d, 6, train, 33);
  // Two identical replicas: every sum doubles, through the host reducer.
  synced.batch = 4;
  synced.reduce = [](tensor& values) {
    for (int64_t i = 0; i < values.numel(); ++i)
      values.data()[i] *= 2.0f;
    return dtrain::status::ok();
  };
  compare_layer(bn2d, 3 * 5 * 7, synced, 34);
}

BOOST_AUTO_TEST_CASE(layer_norm_matches_cpu) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  run_options batch5, batch1;
  batch5.batch = 5;
  batch1.batch = 1;
  compare_layer([] { return nn::build::layer_norm(37); }, 37, batch5, 40);
  compare_layer([] { return nn::build::layer_norm(300); }, 300, batch1, 41);
}

BOOST_AUTO_TEST_CASE(embedding_matches_cpu_with_repeated_indices) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  run_options o;
  o.batch = 4;
  o.input = {0, 3, 10, 3, 3, 7, 1, 0, 10, 5, 5, 2};  // 3 per sample, repeats
  compare_layer([] { return nn::build::embedding(11, 6); }, 3, o, 50);
}

BOOST_AUTO_TEST_CASE(an_embedding_index_out_of_range_is_the_cpus_error) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  layer_pair p = bind_pair([] { return nn::build::embedding(5, 2); }, 60);
  tensor x = tensor::from_vector({1, 2, 4, 5.5f, 7, 0}, {2, 3});
  tensor gx = on_gpu(x);
  p.cpu->forward(x, {});
  p.gpu->forward(gx, {});
  BOOST_TEST((p.gpu->last_status().code() == dtrain::error_code::out_of_range));
  BOOST_TEST(p.gpu->last_status().to_string() == p.cpu->last_status().to_string());
}

BOOST_AUTO_TEST_CASE(a_small_cnn_trains_the_same_on_cpu_and_cuda) {
  if (!dtrain::testing::cuda_device_or_skip())
    return;
  using namespace nn::build;
  // conv-bn-relu-pool, a residual conv-bn block, global pool, linear.
  auto net = [] {
    return seq(std::make_unique<nn::conv2d>(nn::image_shape{3, 11, 11}, 8,
                                            nn::conv2d_options::square(3, 1, 1)),
               batch_norm2d(8, 11, 11), relu(), nn::max_pool2d({8, 11, 11}, 2),
               residual(seq(std::make_unique<nn::conv2d>(nn::image_shape{8, 5, 5}, 8,
                                                         nn::conv2d_options::square(3, 1, 1)),
                            batch_norm2d(8, 5, 5), relu())),
               nn::global_avg_pool({8, 5, 5}), linear(8, 4));
  };
  auto cpu = nn::model::create(net(), {3 * 11 * 11, device::cpu(), 9}).value();
  auto gpu = nn::model::create(net(), {3 * 11 * 11, device::cuda(), 9}).value();
  for (int step = 0; step < 3; ++step) {
    const std::string at = "step " + std::to_string(step);
    // The inputs outlive the backward, as a model requires.
    tensor x = random_tensor({6, 3 * 11 * 11}, 70 + step);
    tensor gx = on_gpu(x);
    auto y = cpu->forward(x, true);
    auto gy = gpu->forward(gx, true);
    BOOST_REQUIRE(y.is_ok());
    BOOST_REQUIRE_MESSAGE(gy.is_ok(), gy.error().to_string());
    expect_close(**gy, **y, at + ": output");
    tensor dy = random_tensor({6, 4}, 80 + step);
    BOOST_REQUIRE(cpu->backward(dy, false).is_ok());
    BOOST_REQUIRE(gpu->backward(on_gpu(dy), false).is_ok());
    expect_close(gpu->gradients(), cpu->gradients(), at + ": gradients");
    expect_close(gpu->buffers(), cpu->buffers(), at + ": running statistics");
    dtrain::ops::axpy(-0.05f, cpu->gradients(), cpu->parameters());
    dtrain::ops::axpy(-0.05f, gpu->gradients(), gpu->parameters());
  }
  auto eval = gpu->forward(on_gpu(random_tensor({2, 3 * 11 * 11}, 90)), false);
  BOOST_TEST(eval.is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
