#include "dtrain/nn/residual.hpp"

#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

std::string residual_block::describe() const { return "residual(" + inner_->describe() + ")"; }

result<int64_t> residual_block::output_features(int64_t input) const {
  if (inner_->layer_count() == 0)
    return invalid_argument("residual block needs at least one inner layer");
  auto out = inner_->output_features(input);
  if (!out)
    return out.error().with_context(describe());
  if (*out != input)
    return shape_mismatch(describe() + ": its layers turn " + std::to_string(input) +
                          " features into " + std::to_string(*out) +
                          ", but a residual block must give back as many as it takes");
  return input;
}

std::vector<parameter_spec> residual_block::parameter_specs() const {
  auto specs = inner_->parameter_specs();
  for (auto& spec : specs)
    spec.name = "inner." + spec.name;
  return specs;
}

void residual_block::initialize(std::vector<tensor>& params, rng& gen) const {
  inner_->initialize(params, gen);
}

void residual_block::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  inner_->bind(std::move(params), std::move(grads));
}

std::vector<buffer_spec> residual_block::buffer_specs() const {
  auto specs = inner_->buffer_specs();
  for (auto& spec : specs)
    spec.name = "inner." + spec.name;
  return specs;
}

void residual_block::bind_buffers(std::vector<tensor> buffers) {
  inner_->bind_buffers(std::move(buffers));
}

const tensor& residual_block::forward(const tensor& x, const forward_context& ctx) {
  const tensor& h = inner_->forward(x, ctx);
  ensure(output_, x.shape(), x.where());
  output_.copy_from(x);
  ops::axpy(1.0f, h, output_);
  return output_;
}

void residual_block::set_statistics_reducer(const statistics_reducer& reduce) {
  inner_->set_statistics_reducer(reduce);
}

status residual_block::last_status() const {
  status s = inner_->last_status();
  return s.is_ok() ? s : s.with_context("residual block");
}

const tensor& residual_block::backward(const tensor& dy, const backward_context& ctx) {
  // dL/dx = dy (the skip) + the inner layers' dL/dx.
  const tensor& inner_grad = inner_->backward(dy, ctx);
  if (!ctx.need_input_grad) {
    input_grad_ = tensor();
    return input_grad_;
  }
  ensure(input_grad_, dy.shape(), dy.where());
  input_grad_.copy_from(dy);
  ops::axpy(1.0f, inner_grad, input_grad_);
  return input_grad_;
}

} // namespace dtrain::nn
