#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::optim {

/// A learning rate as a function of a step or epoch counter t >= 0 (the
/// caller chooses the unit, as with torch's schedulers stepped per epoch or
/// per batch). Pure: lr(t) depends on t only, so a resumed run gets the same
/// rate without replaying history. Immutable, thread-safe.
class lr_schedule {
public:
  virtual ~lr_schedule() = default;
  virtual float lr(int64_t t) const = 0;
  virtual std::string describe() const = 0;
};

/// base.
std::unique_ptr<lr_schedule> constant_lr(float base);
/// base * gamma^(t / step_size)  (torch StepLR).
result<std::unique_ptr<lr_schedule>> step_lr(float base, int64_t step_size, float gamma);
/// base * gamma^(number of milestones <= t)  (torch MultiStepLR; the
/// Catalyst tutorial uses milestones [3, 6]). Milestones must increase.
result<std::unique_ptr<lr_schedule>> multistep_lr(float base, std::vector<int64_t> milestones,
                                                  float gamma);
/// eta_min + (base - eta_min) (1 + cos(pi t / t_max)) / 2 for t <= t_max,
/// eta_min after (torch CosineAnnealingLR without restarts).
result<std::unique_ptr<lr_schedule>> cosine_lr(float base, int64_t t_max, float eta_min);
/// Multiplies `inner` by a factor rising linearly from start_factor at t = 0
/// to 1 at t = warmup, and 1 after (torch LinearLR composed with another).
result<std::unique_ptr<lr_schedule>> linear_warmup(std::unique_ptr<lr_schedule> inner,
                                                   int64_t warmup, float start_factor);

} // namespace dtrain::optim
