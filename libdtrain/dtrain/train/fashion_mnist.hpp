#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/supervised.hpp"

namespace dtrain::train {

/// A single-process MLP classifier run on Fashion-MNIST: the recipe the
/// README's main command and the accuracy test share. Defaults reach about
/// 0.89 test accuracy with the 784-256-128-100-10 ReLU MLP of the
/// Fashion-MNIST benchmark table.
struct classifier_run_options {
  static optim::schedule_spec cosine_schedule() {
    optim::schedule_spec s;
    s.name = "cosine";
    return s;
  }

  nn::mlp_spec model;                 // 784-256-128-100-10, ReLU
  optim::optimizer_spec optimizer;    // Adam, lr 1e-3, cosine decay
  optim::schedule_spec schedule = cosine_schedule();  // stepped per epoch
  int64_t epochs = 15;
  int64_t batch_size = 128;
  uint64_t seed = 0;
  device where = device::cpu();
  std::string data_dir;               // empty: the default directory
  int prefetch = 2;
  /// What the GEMMs compute in (tensor/precision.hpp); fp16 adds dynamic
  /// loss scaling with `loss_scaling`'s rules.
  precision compute = precision::fp32;
  loss_scaler_options loss_scaling;
};

struct epoch_report {
  int64_t epoch = 0;     // 1-based
  float lr = 0;
  epoch_totals train;
  epoch_totals test;
};

/// Loads the data, builds model, optimizer and schedule, and trains,
/// calling `on_epoch` after each epoch's test pass. Returns the last
/// epoch's report; any error names what failed (data file, config field).
result<epoch_report> run_fashion_mnist(const classifier_run_options& options,
                                       const std::function<void(const epoch_report&)>& on_epoch);

} // namespace dtrain::train
