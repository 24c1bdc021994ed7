#pragma once

/// Training operators with their own steps, for the custom-step suites
/// (tests/train/custom_steps_test.cpp, tests/driver/tuner/custom_step_metrics_test.cpp).
///
///  - "weighted_l2_regression": linear regression (keys samples, features,
///    lr, l2, direct) trained by plain SGD on a hand-written loss: the
///    weighted MSE (1/B) sum w_i (y_i - t_i)^2, w_i = 1.5 where t_i > 0 else
///    1, plus l2/2 |theta|^2. Its gradient goes through backward() and the
///    L2 term is added into gradients() afterwards (the step holds the
///    sync), or, with direct = true, the whole gradient is written into
///    gradients() by hand without backward(); either way multiplied by
///    ctx.loss_scale (fp16). Reports "mae" (mean absolute error) in
///    training and validation.
///  - "failing_step": a tiny regression whose step fails as `fail` says:
///    train (an error at batch 3), throw (an exception at batch 3),
///    validation (an error in validation_step), reserved (a metric named
///    "loss"), late_hold (hold_gradient_sync() after backward()).
///  - "batch_norm_regression": the same regression data (keys samples,
///    features, lr, sync_batch_norm) through linear, BatchNorm1d, ReLU,
///    linear, with the standard steps: a model with running statistics.
///  - "unscheduled_regression": the regression (keys samples, features,
///    lr) without a schedule, so the replica's default one sets its rate.
namespace dtrain::testing {

/// Registers them (idempotent; any thread).
void register_step_operators();

} // namespace dtrain::testing
