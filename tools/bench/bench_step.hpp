#pragma once

#include <chrono>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/train/loss_scaler.hpp"

/// The step both step benchmarks time: forward, cross-entropy loss,
/// backward and an SGD step on a fixed random batch of 784-feature inputs
/// (Fashion-MNIST's shape) with 10 classes.
namespace dtrain::bench {

/// Median milliseconds of `steps` SGD steps of `m` on a batch of `batch`,
/// after 3 warm-up steps, on the model's device (a CUDA step is timed to a
/// synchronize, since its kernels only enqueue). A model computing in fp16
/// steps with its loss scaling, as torch's GradScaler step does.
inline double sgd_step_ms(nn::model& m, int64_t batch, int steps) {
  using clock_type = std::chrono::steady_clock;
  auto opt = optim::sgd::create({}).value();
  nn::cross_entropy_loss loss;
  rng gen(1234);
  std::vector<float> xv(batch * 784), yv(batch);
  for (auto& v : xv)
    v = gen.normal();
  for (auto& v : yv)
    v = static_cast<float>(gen.below(10));
  auto x = tensor::from_vector(xv, {batch, 784}).to(m.where());
  auto y = tensor::from_vector(yv, {batch}).to(m.where());
  const bool on_cuda = m.where().is_cuda();
  train::loss_scaler scaler(train::loss_scaler_options{},
                            m.compute_precision() == precision::fp16);
  std::vector<double> times;
  for (int i = 0; i < steps + 3; ++i) {
    auto start = clock_type::now();
    loss.set_grad_multiplier(scaler.scale());
    loss.compute(*m.forward(x, true).value(), y, true).value();
    (void)m.backward(loss.grad(), /*accumulate=*/false);
    if (scaler.unscale_or_skip(m.gradients()))
      (void)opt->step(m.parameters(), m.gradients(), 0.01f);
    if (on_cuda)
      (void)cuda::synchronize("bench step");
    if (i >= 3)
      times.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  return median(times);
}

} // namespace dtrain::bench
