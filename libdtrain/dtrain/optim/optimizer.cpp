#include "dtrain/optim/optimizer.hpp"

#include <cmath>

#include "dtrain/core/check.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::optim {

status optimizer::step(tensor& params, const tensor& grads, float lr) {
  if (!params.defined() || !grads.defined() || params.numel() != grads.numel() ||
      params.where() != grads.where())
    return invalid_argument(name() + ": parameters and gradients must have the same size "
                            "and device");
  if (!state_.empty() &&
      (state_[0].numel() != params.numel() || state_[0].where() != params.where()))
    return invalid_argument(name() + ": parameters changed size or device since the "
                            "optimizer's state was made (" + std::to_string(state_[0].numel()) +
                            " on " + state_[0].where().to_string() + ", now " +
                            std::to_string(params.numel()) + " on " +
                            params.where().to_string() + ")");
  if (!std::isfinite(lr) || lr < 0.0f)
    return invalid_argument(name() + ": learning rate must be finite and >= 0");
  allocate_state(params);
  DTRAIN_RETURN_IF_ERROR(update(params, grads, lr));
  ++steps_;
  return status::ok();
}

void optimizer::allocate_state(const tensor& params) {
  allocate_state(params.numel(), params.where());
}

void optimizer::allocate_state(int64_t count, device where) {
  if (!state_.empty())
    return;
  for (size_t i = 0; i < state_names().size(); ++i)
    state_.push_back(tensor::zeros({count}, where));
}

status optimizer::update_range(tensor&, const tensor&, std::vector<tensor>&, float) {
  return unavailable(name() + " cannot update a shard of the parameters");
}

namespace {

// The owned ranges' total, or an error naming the range that does not fit.
result<int64_t> owned_total(const std::string& who, const tensor& params,
                            const std::vector<span>& owned) {
  int64_t total = 0, end = 0;
  for (const span& r : owned) {
    if (r.count < 0 || r.begin < end || r.count > params.numel() - r.begin)
      return invalid_argument(who + ": owned range [" + std::to_string(r.begin) + ", +" +
                              std::to_string(r.count) + ") overlaps another or lies outside the " +
                              std::to_string(params.numel()) + " parameters");
    end = r.begin + r.count;
    total += r.count;
  }
  return total;
}

} // namespace

status optimizer::step_owned(tensor& params, const tensor& grads, const std::vector<span>& owned,
                             float lr) {
  if (!shardable())
    return unavailable(
                  name() + " cannot step a shard of the parameters (ZeRO needs one of dtrain's "
                           "optimizers: sgd, adam, adamw)");
  if (!params.defined() || !grads.defined() || params.numel() != grads.numel() ||
      params.where() != grads.where())
    return invalid_argument(name() + ": parameters and gradients must have the same size "
                            "and device");
  DTRAIN_ASSIGN_OR_RETURN(int64_t total, owned_total(name(), params, owned));
  if (!state_.empty() && (state_[0].numel() != total || state_[0].where() != params.where()))
    return invalid_argument(name() + ": the owned shard changed since the optimizer's state was "
                            "made (" + std::to_string(state_[0].numel()) + " elements, now " +
                            std::to_string(total) + ")");
  if (!std::isfinite(lr) || lr < 0.0f)
    return invalid_argument(name() + ": learning rate must be finite and >= 0");
  allocate_state(total, params.where());
  DTRAIN_RETURN_IF_ERROR(update_owned(params, grads, owned, lr));
  ++steps_;
  return status::ok();
}

status optimizer::update_owned(tensor& params, const tensor& grads,
                               const std::vector<span>& owned, float lr) {
  int64_t at = 0;
  std::vector<tensor> state(state_.size());
  for (const span& r : owned) {
    if (r.count == 0)
      continue;
    tensor p = params.view(r.begin, {r.count});
    const tensor g = grads.view(r.begin, {r.count});
    for (size_t i = 0; i < state_.size(); ++i)
      state[i] = state_[i].view(at, {r.count});
    DTRAIN_RETURN_IF_ERROR(update_range(p, g, state, lr));
    at += r.count;
  }
  return status::ok();
}

namespace {

std::vector<std::pair<std::string, tensor*>> named(const std::vector<std::string>& names,
                                                   std::vector<tensor>& buffers) {
  std::vector<std::pair<std::string, tensor*>> out;
  for (size_t i = 0; i < buffers.size(); ++i)
    out.emplace_back(names[i], &buffers[i]);
  return out;
}

status non_negative(const char* field, float value) {
  if (!(value >= 0.0f) || !std::isfinite(value))
    return invalid_argument(std::string(field) + " must be finite and >= 0");
  return status::ok();
}

} // namespace

result<std::unique_ptr<sgd>> sgd::create(const sgd_options& options) {
  DTRAIN_RETURN_IF_ERROR(non_negative("sgd.momentum", options.momentum));
  DTRAIN_RETURN_IF_ERROR(non_negative("sgd.dampening", options.dampening));
  DTRAIN_RETURN_IF_ERROR(non_negative("sgd.weight_decay", options.weight_decay));
  if (options.nesterov && (options.momentum <= 0.0f || options.dampening != 0.0f))
    return invalid_argument("sgd.nesterov needs momentum > 0 and dampening = 0");
  return std::unique_ptr<sgd>(new sgd(options));
}

std::vector<std::string> sgd::state_names() const {
  if (options_.momentum == 0.0f)
    return {};
  return {"momentum"};
}

std::vector<std::pair<std::string, tensor*>> sgd::state_buffers() {
  return named(state_names(), state_);
}

status sgd::update(tensor& params, const tensor& grads, float lr) {
  return update_range(params, grads, state_, lr);
}

status sgd::update_range(tensor& params, const tensor& grads, std::vector<tensor>& state,
                         float lr) {
  sgd_hyper h{lr, options_.momentum, options_.dampening, options_.weight_decay,
              options_.nesterov, steps_ == 0};
  ops::sgd_update(params, grads, state.empty() ? nullptr : &state[0], h);
  return status::ok();
}

result<std::unique_ptr<adam>> adam::create(const adam_options& options) {
  if (!(options.beta1 >= 0.0f && options.beta1 < 1.0f))
    return invalid_argument("adam.beta1 must be in [0, 1)");
  if (!(options.beta2 >= 0.0f && options.beta2 < 1.0f))
    return invalid_argument("adam.beta2 must be in [0, 1)");
  if (!(options.eps > 0.0f))
    return invalid_argument("adam.eps must be > 0");
  DTRAIN_RETURN_IF_ERROR(non_negative("adam.weight_decay", options.weight_decay));
  return std::unique_ptr<adam>(new adam(options));
}

std::vector<std::string> adam::state_names() const { return {"exp_avg", "exp_avg_sq"}; }

std::vector<std::pair<std::string, tensor*>> adam::state_buffers() {
  return named(state_names(), state_);
}

status adam::update(tensor& params, const tensor& grads, float lr) {
  return update_range(params, grads, state_, lr);
}

status adam::update_range(tensor& params, const tensor& grads, std::vector<tensor>& state,
                          float lr) {
  auto t = static_cast<double>(steps_ + 1);
  adam_hyper h{lr,
               options_.beta1,
               options_.beta2,
               options_.eps,
               options_.weight_decay,
               options_.decoupled,
               static_cast<float>(1.0 - std::pow(options_.beta1, t)),
               static_cast<float>(1.0 - std::pow(options_.beta2, t))};
  ops::adam_update(params, grads, state[0], state[1], h);
  return status::ok();
}

} // namespace dtrain::optim
