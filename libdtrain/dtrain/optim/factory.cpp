#include "dtrain/optim/factory.hpp"

#include "dtrain/core/check.hpp"

namespace dtrain::optim {

result<std::unique_ptr<optimizer>> make_optimizer(const optimizer_spec& spec) {
  if (spec.name == "sgd") {
    DTRAIN_ASSIGN_OR_RETURN(auto opt, sgd::create({spec.momentum, spec.dampening,
                                                   spec.weight_decay, spec.nesterov}));
    return std::unique_ptr<optimizer>(std::move(opt));
  }
  if (spec.name == "adam" || spec.name == "adamw") {
    DTRAIN_ASSIGN_OR_RETURN(auto opt, adam::create({spec.beta1, spec.beta2, spec.eps,
                                                    spec.weight_decay, spec.name == "adamw"}));
    return std::unique_ptr<optimizer>(std::move(opt));
  }
  return invalid_argument("unknown optimizer '" + spec.name + "' (choose sgd, adam or adamw)");
}

namespace {

result<std::unique_ptr<lr_schedule>> base_schedule(const schedule_spec& spec, float base,
                                                   int64_t length) {
  if (spec.name == "constant")
    return constant_lr(base);
  if (spec.name == "step")
    return step_lr(base, spec.step_size, spec.gamma);
  if (spec.name == "multistep")
    return multistep_lr(base, spec.milestones, spec.gamma);
  if (spec.name == "cosine")
    return cosine_lr(base, spec.t_max > 0 ? spec.t_max : length, spec.eta_min);
  return invalid_argument("unknown schedule '" + spec.name +
                          "' (choose constant, step, multistep or cosine)");
}

} // namespace

result<std::unique_ptr<lr_schedule>> make_schedule(const schedule_spec& spec, float base,
                                                   int64_t length) {
  DTRAIN_ASSIGN_OR_RETURN(auto schedule, base_schedule(spec, base, length));
  if (spec.warmup <= 0)
    return schedule;
  return linear_warmup(std::move(schedule), spec.warmup, spec.warmup_start);
}

} // namespace dtrain::optim
