#include "dtrain/libtorch/operator.hpp"

#include <cmath>
#include <mutex>

#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"

namespace dtrain::libtorch {

status torch_operator::setup(const train::hyperparameters& config, train::replica_context& ctx,
                             train::operator_parts& parts) {
  torch_parts tp;
  {
    // libtorch's default generator is the process's: replicas of one
    // process (an embedded cluster) seed it and draw their initial values
    // one at a time, so that every replica builds the same module.
    static std::mutex building;
    std::lock_guard<std::mutex> lock(building);
    torch::manual_seed(ctx.seed());
    try {
      DTRAIN_RETURN_IF_ERROR(build(config, ctx, tp));
    } catch (const std::exception& e) {
      return torch_error("build() threw", e);
    }
  }
  if (tp.module.is_empty())
    return invalid_argument("build() must set torch_parts::module");
  if ((tp.torch_optimizer == nullptr) == (tp.optimizer == nullptr))
    return invalid_argument("build() must set exactly one of torch_parts::torch_optimizer "
                            "(libtorch's) and torch_parts::optimizer (dtrain's)");
  if (!tp.train_data)
    return invalid_argument("build() must set torch_parts::train_data");
  DTRAIN_ASSIGN_OR_RETURN(parts.model,
                          make_model(std::move(tp.module), {tp.input_shape, ctx.where()}));
  layer_ = layer_of(*parts.model);
  if (tp.torch_optimizer && tp.torch_optimizer->param_groups().empty())
    return invalid_argument("build(): the libtorch optimizer has no parameter groups");
  if (tp.torch_optimizer) {
    // Without a schedule, the learning rate the user gave libtorch's
    // optimizer stays (dtrain's default would be the config's `lr`).
    if (!tp.schedule)
      tp.schedule = optim::constant_lr(
          static_cast<float>(tp.torch_optimizer->param_groups().front().options().get_lr()));
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer,
                            torch_optimizer::create(std::move(tp.torch_optimizer), *layer_));
  } else {
    parts.optimizer = std::move(tp.optimizer);
  }
  parts.loss = tp.loss ? std::move(tp.loss) : std::make_unique<nn::cross_entropy_loss>();
  parts.schedule = std::move(tp.schedule);
  parts.train_data = std::move(tp.train_data);
  parts.validation_data = std::move(tp.validation_data);
  parts.classification = tp.classification;
  classification_ = tp.classification;
  torch_loss_ = std::move(tp.torch_loss);
  return status::ok();
}

at::Tensor torch_operator::inputs(const train::step_context& ctx) const {
  std::vector<int64_t> shape{ctx.batch.size()};
  const auto& sample = layer_->options().input_shape;
  shape.insert(shape.end(), sample.begin(), sample.end());
  return as_torch(ctx.batch.features).view(shape);
}

at::Tensor torch_operator::targets(const train::step_context& ctx) const {
  at::Tensor t = as_torch(ctx.batch.targets);
  return classification_ ? t.to(torch::kLong) : t;
}

status torch_operator::backward(train::step_context& ctx, const at::Tensor& loss) {
  if (loss.numel() != 1)
    return invalid_argument("the loss must be a scalar, got " + loss.toString() + " of " +
                            std::to_string(loss.numel()) + " elements");
  if (!ctx.accumulate)
    ctx.model.zero_grad();
  layer_->begin_backward();
  try {
    if (ctx.loss_scale != 1.0f)
      (loss * ctx.loss_scale).backward();
    else
      loss.backward();
  } catch (const std::exception& e) {
    return torch_error("libtorch backward", e);
  }
  return layer_->check_bound();
}

result<train::step_result> torch_operator::train_step(train::step_context& ctx) {
  if (!torch_loss_)
    return train::standard_train_step(ctx);
  if (ctx.model.compute_precision() != precision::fp32)
    return invalid_argument(std::string("a libtorch module computes as its own code says; the "
                                        "trainer's precision must be fp32, not ") +
                            to_string(ctx.model.compute_precision()));
  train::step_result r;
  try {
    at::Tensor out = layer_->forward_torch(inputs(ctx), true);
    at::Tensor target = targets(ctx);
    at::Tensor loss = torch_loss_(out, target);
    r.loss = loss.item<double>();
    if (!std::isfinite(r.loss))
      return status(error_code::numerical_error,
                    "the loss is not finite in epoch " + std::to_string(ctx.epoch) +
                        "; lower the lr");
    if (classification_)
      r.correct = out.argmax(1).eq(target).sum().item<int64_t>();
    DTRAIN_RETURN_IF_ERROR(backward(ctx, loss));
  } catch (const std::exception& e) {
    return torch_error("libtorch", e);
  }
  return r;
}

result<train::step_result> torch_operator::validation_step(train::step_context& ctx) {
  if (!torch_loss_)
    return train::standard_validation_step(ctx);
  train::step_result r;
  try {
    at::Tensor out = layer_->forward_torch(inputs(ctx), false);
    at::Tensor target = targets(ctx);
    torch::NoGradGuard no_grad;
    r.loss = torch_loss_(out, target).item<double>();
    if (!std::isfinite(r.loss))
      return status(error_code::numerical_error,
                    "the loss is not finite on the validation set after epoch " +
                        std::to_string(ctx.epoch));
    if (classification_)
      r.correct = out.argmax(1).eq(target).sum().item<int64_t>();
  } catch (const std::exception& e) {
    return torch_error("libtorch", e);
  }
  return r;
}

train::bytes torch_operator::save_state() const {
  return layer_ != nullptr ? layer_->extra_state() : train::bytes{};
}

status torch_operator::load_state(const train::bytes& state) {
  if (layer_ == nullptr)
    return status::ok();
  return layer_->load_extra_state(state);
}

} // namespace dtrain::libtorch
