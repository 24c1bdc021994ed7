// The replica's optimizer update after a synced micro-batch: fp16's
// overflow check, gradient clipping, and the update itself, whole or (ZeRO)
// of this rank's shard followed by the all-gather of the parameters.
#include <cstdint>

#include "dtrain/core/check.hpp"
#include "dtrain/train/replica.hpp"
#include "dtrain/zero/sharded_update.hpp"

namespace dtrain::train {

result<bool> replica_runner::apply_update(float lr) {
  nn::model& model = *parts_.model;
  tensor& grads = model.gradients();
  const zero::shard_layout* layout = sync_->layout();
  // At stage 2 a rank holds the group's gradient in its own parts only:
  // the check and the norm add up the parts across the group.
  const bool scattered = layout != nullptr && options_.zero_stage >= 2;
  const std::vector<optim::span> ranges =
      scattered ? layout->owned() : std::vector<optim::span>{{0, grads.numel()}};
  zero::gradient_check_options check;
  check.unscale = scaler_.enabled();
  check.inv_scale = 1.0f / scaler_.scale();
  check.norm = options_.clip_grad_norm > 0;
  zero::gradient_state seen;
  if (check.unscale || check.norm) {
    DTRAIN_ASSIGN_OR_RETURN(seen, zero::inspect_gradients(grads, ranges, check,
                                                          scattered ? &ctx_->communicator()
                                                                    : nullptr));
  }
  // Every replica sees the same flag, so all skip or all step together
  // and their scalers stay identical.
  scaler_.update(seen.finite);
  if (!seen.finite)
    return false;
  if (check.norm) {
    last_grad_norm_ = seen.norm;
    zero::clip_ranges(grads, ranges, seen.norm, options_.clip_grad_norm);
  }
  if (layout == nullptr) {
    DTRAIN_RETURN_IF_ERROR(parts_.optimizer->step(model.parameters(), grads, lr));
    return true;
  }
  DTRAIN_RETURN_IF_ERROR(
      parts_.optimizer->step_owned(model.parameters(), grads, layout->owned(), lr));
  if (shards_) {  // stage 3: the others' parts are gathered when a layer needs them
    shards_->reshard();
    return true;
  }
  DTRAIN_RETURN_IF_ERROR(zero::gather_parameters(ctx_->communicator(), model.parameters(),
                                                 *layout, gather_scratch_)
                             .with_context("replica " + std::to_string(ctx_->rank())));
  return true;
}

void replica_runner::report_memory(epoch_metrics& m) const {
  const nn::model& model = *parts_.model;
  const double floats = 4.0;
  const double n = static_cast<double>(model.parameter_count());
  double state = 0;
  for (const auto& [name, buffer] : parts_.optimizer->state_buffers())
    state += static_cast<double>(buffer->numel());
  // Stage 3 gives back the whole pages of the others' parts between passes.
  m.extra["memory.parameters_bytes"] =
      n * floats - (shards_ ? static_cast<double>(shards_->released_bytes()) : 0.0);
  // Stage 2 gives back the whole pages of the others' parts as their
  // buckets are reduced (gradient_sync.hpp): what is left between steps.
  m.extra["memory.gradients_bytes"] = n * floats - static_cast<double>(sync_->released_bytes());
  m.extra["memory.optimizer_bytes"] = state * floats;
  if (options_.clip_grad_norm > 0)
    m.extra["grad_norm"] = last_grad_norm_;
}

} // namespace dtrain::train
