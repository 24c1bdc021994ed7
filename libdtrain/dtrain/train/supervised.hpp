#pragma once

#include <cstdint>

#include "dtrain/core/status.hpp"
#include "dtrain/data/loader.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/train/loss_scaler.hpp"

/// The supervised training loop of one process: what a replica runs between
/// gradient syncs, and what the single-process examples run alone.
namespace dtrain::train {

/// Sums over the batches of an epoch; the means are derived.
struct epoch_totals {
  double loss_sum = 0;       // sum over batches of (mean batch loss * batch size)
  int64_t correct = 0;       // classification only
  int64_t samples = 0;
  double seconds = 0;

  double mean_loss() const { return samples > 0 ? loss_sum / static_cast<double>(samples) : 0; }
  double accuracy() const {
    return samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : 0;
  }
  double samples_per_second() const { return seconds > 0 ? samples / seconds : 0; }
};

struct loop_options {
  /// Count argmax matches against the targets (class indices).
  bool classification = true;
  /// fp16's dynamic loss scaling (not owned; null or disabled: none). When
  /// enabled, the loss's gradient is multiplied by its scale and a step
  /// whose gradient is not finite is skipped (loss_scaler.hpp).
  loss_scaler* scaler = nullptr;
};

/// One optimizer step on one batch: forward in training mode, loss and its
/// gradient, backward (overwriting the gradients), optimizer step with `lr`. Adds the
/// batch's loss and matches to `totals`. With options.scaler, the step is
/// skipped (the parameters untouched) when the scaled gradient overflows.
/// A non-finite loss is an error (the
/// step is not applied), so a diverging run stops with a clear message.
status train_step(nn::model& model, nn::loss_function& loss, optim::optimizer& opt,
                  const data::batch& batch, float lr, const loop_options& options,
                  epoch_totals& totals);

/// One pass over `loader`'s current epoch (the caller calls begin_epoch).
result<epoch_totals> train_epoch(nn::model& model, nn::loss_function& loss,
                                 optim::optimizer& opt, data::loader& loader, float lr,
                                 const loop_options& options);

/// Loss and accuracy over one epoch of `loader` in evaluation mode (dropout
/// off, no gradients).
result<epoch_totals> evaluate(nn::model& model, nn::loss_function& loss,
                              data::loader& loader, const loop_options& options);

} // namespace dtrain::train
