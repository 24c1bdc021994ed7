#include "dtrain/train/loss_scaler.hpp"

#include <cmath>
#include <string>

#include "dtrain/tensor/ops.hpp"

namespace dtrain::train {

loss_scaler::loss_scaler(const loss_scaler_options& options, bool enabled)
  : options_(options), enabled_(enabled), scale_(enabled ? options.init_scale : 1.0f) {}

bool loss_scaler::unscale_or_skip(tensor& grads) {
  if (!enabled_)
    return true;
  // One fused pass on the gradient's device, as torch's GradScaler does:
  // the gradient is divided whatever it holds (a skipped step's is
  // overwritten by the next backward anyway), and only the flag comes back.
  if (!found_inf_.defined() || found_inf_.where() != grads.where())
    found_inf_ = tensor::zeros({1}, grads.where());
  const bool finite = ops::unscale_and_check_finite(grads, 1.0f / scale_, found_inf_);
  update(finite);
  return finite;
}

void loss_scaler::update(bool finite) {
  if (!enabled_)
    return;
  if (!finite) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
    return;
  }
  if (++growth_tracker_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
}

status loss_scaler::restore(const state& s) {
  if (!(s.scale > 0) || !std::isfinite(s.scale) || s.growth_tracker < 0 || s.skipped_steps < 0)
    return invalid_argument("loss scaler state: scale " + std::to_string(s.scale) +
                            ", growth tracker " + std::to_string(s.growth_tracker) +
                            ", skipped steps " + std::to_string(s.skipped_steps));
  scale_ = static_cast<float>(s.scale);
  growth_tracker_ = s.growth_tracker;
  skipped_ = s.skipped_steps;
  return status::ok();
}

} // namespace dtrain::train
