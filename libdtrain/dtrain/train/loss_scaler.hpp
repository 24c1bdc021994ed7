#pragma once

#include <cstdint>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::train {

/// The rules of dynamic loss scaling; the defaults are PyTorch's
/// torch.cuda.amp.GradScaler's (init_scale 2^16, growth_factor 2,
/// backoff_factor 0.5, growth_interval 2000).
struct loss_scaler_options {
  float init_scale = 65536.0f;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  /// Consecutive steps with finite gradients after which the scale grows.
  int64_t growth_interval = 2000;
};

/// Dynamic loss scaling for fp16 training. The loss's gradient is
/// multiplied by scale() (so that small gradients survive half's 2^-24
/// floor); after the gradient sync, unscale_or_skip() checks the synced
/// gradient: all finite, it divides it by the scale and tells the caller to
/// step; any inf or NaN, it tells the caller to skip the step and halves the
/// scale. The rule is GradScaler's (torch/amp/grad_scaler.py, "update"):
/// backoff on any non-finite gradient, resetting the count of good steps;
/// growth by growth_factor after growth_interval consecutive finite steps.
///
/// Replicas must hold identical scalers: each starts from the same options
/// (or checkpoint) and sees the same synced gradient, so each makes the same
/// decision. A disabled scaler (every precision but fp16) is scale 1 and
/// never skips. Not thread-safe.
class loss_scaler {
public:
  loss_scaler() = default;
  loss_scaler(const loss_scaler_options& options, bool enabled);

  bool enabled() const { return enabled_; }
  float scale() const { return enabled_ ? scale_ : 1.0f; }
  /// Consecutive finite steps since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }
  /// Steps skipped since the scaler was made (or restored).
  int64_t skipped_steps() const { return skipped_; }

  /// Decides a step from the synced gradient `grads` (synchronizes a CUDA
  /// device to read one flag): divides grads by scale() in one pass and
  /// returns true (then update the optimizer), or false (skip the step;
  /// grads then hold garbage the next backward overwrites) when any element
  /// was inf or NaN. Updates the scale either way. A disabled scaler returns
  /// true and touches nothing.
  bool unscale_or_skip(tensor& grads);
  /// The same decision, for a caller that already knows whether the
  /// gradient is finite (and unscales itself).
  void update(bool finite);

  /// What a checkpoint keeps: with it, a restored group scales and skips
  /// exactly as the saved one would have.
  struct state {
    double scale = 1.0;
    int64_t growth_tracker = 0;
    int64_t skipped_steps = 0;
  };
  state saved() const { return {scale_, growth_tracker_, skipped_}; }
  /// Restores saved(); a scale that is not finite and > 0, or a negative
  /// count, is invalid_argument.
  status restore(const state& s);

private:
  loss_scaler_options options_;
  bool enabled_ = false;
  float scale_ = 1.0f;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
  tensor found_inf_;  // [1] scratch on the gradient's device
};

} // namespace dtrain::train
