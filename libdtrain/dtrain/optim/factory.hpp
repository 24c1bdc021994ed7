#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/optim/lr_schedule.hpp"
#include "dtrain/optim/optimizer.hpp"

/// Optimizers and schedules by name, as configs and command lines give them.
namespace dtrain::optim {

/// The learning rate of a run whose configuration has no `lr`: Adam's usual
/// rate (Adam is the built-in operators' default optimizer). The one
/// default: the built-in operators read it for their optimizer and
/// schedule, and the replica reads it for the constant schedule it gives an
/// operator that sets none (train::operator_parts::schedule).
inline constexpr double default_learning_rate = 1e-3;

struct optimizer_spec {
  std::string name = "adam";   // sgd, adam, adamw
  float lr = static_cast<float>(default_learning_rate);
  float momentum = 0.0f;       // sgd
  float dampening = 0.0f;      // sgd
  bool nesterov = false;       // sgd
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // adam, adamw
};

/// Errors name the unknown optimizer or the bad field.
result<std::unique_ptr<optimizer>> make_optimizer(const optimizer_spec& spec);

struct schedule_spec {
  std::string name = "constant";      // constant, step, multistep, cosine
  int64_t step_size = 1;              // step
  std::vector<int64_t> milestones;    // multistep
  float gamma = 0.1f;                 // step, multistep
  int64_t t_max = 0;                  // cosine; 0 = the run's length
  float eta_min = 0.0f;               // cosine
  int64_t warmup = 0;                 // linear warm-up length, 0 = none
  float warmup_start = 0.1f;          // warm-up's first factor
};

/// The schedule for base rate `base` over a run of `length` steps or epochs.
result<std::unique_ptr<lr_schedule>> make_schedule(const schedule_spec& spec, float base,
                                                   int64_t length);

} // namespace dtrain::optim
