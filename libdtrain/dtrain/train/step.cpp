// The built-in training and validation steps of one batch, which are also
// training_operator's defaults (operator.hpp).
#include <cmath>
#include <string>

#include "dtrain/comm/gradient_sync.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/train/operator.hpp"

namespace dtrain::train {

namespace {

// Correct predictions of `output` when the operator classifies, else -1.
result<int64_t> count_correct(step_context& ctx, const tensor& output) {
  if (!ctx.classification)
    return int64_t{-1};
  return ctx.accuracy.count(output, ctx.batch.targets);
}

} // namespace

status step_context::hold_gradient_sync() {
  return sync == nullptr ? status::ok() : sync->hold();
}

result<step_result> standard_train_step(step_context& ctx) {
  DTRAIN_ASSIGN_OR_RETURN(const tensor* out, ctx.model.forward(ctx.batch.features, true));
  ctx.output = out;
  ctx.loss.set_grad_multiplier(ctx.loss_scale);
  DTRAIN_ASSIGN_OR_RETURN(float loss, ctx.loss.compute(*out, ctx.batch.targets, true));
  if (!std::isfinite(loss))
    return status(error_code::numerical_error,
                  "the loss is not finite in epoch " + std::to_string(ctx.epoch) +
                      "; lower the lr");
  step_result r;
  r.loss = loss;
  DTRAIN_ASSIGN_OR_RETURN(r.correct, count_correct(ctx, *out));
  DTRAIN_RETURN_IF_ERROR(ctx.model.backward(ctx.loss.grad(), ctx.accumulate));
  return r;
}

result<step_result> standard_validation_step(step_context& ctx) {
  DTRAIN_ASSIGN_OR_RETURN(const tensor* out, ctx.model.forward(ctx.batch.features, false));
  ctx.output = out;
  DTRAIN_ASSIGN_OR_RETURN(float loss, ctx.loss.compute(*out, ctx.batch.targets, false));
  if (!std::isfinite(loss))
    return status(error_code::numerical_error,
                  "the " + ctx.loss.name() + " loss is not finite (" + std::to_string(loss) +
                      ") on the validation set after epoch " + std::to_string(ctx.epoch));
  step_result r;
  r.loss = loss;
  DTRAIN_ASSIGN_OR_RETURN(r.correct, count_correct(ctx, *out));
  return r;
}

result<step_result> training_operator::train_step(step_context& ctx) {
  return standard_train_step(ctx);
}

result<step_result> training_operator::validation_step(step_context& ctx) {
  return standard_validation_step(ctx);
}

} // namespace dtrain::train
