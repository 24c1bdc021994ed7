#include "dtrain/nn/linear.hpp"

#include <cmath>

#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

linear::linear(int64_t in_features, int64_t out_features, bool bias)
  : in_(in_features), out_(out_features), has_bias_(bias) {}

std::string linear::describe() const {
  return "linear(" + std::to_string(in_) + "->" + std::to_string(out_) + ")";
}

result<int64_t> linear::output_features(int64_t input) const {
  if (in_ <= 0 || out_ <= 0)
    return invalid_argument(describe() + " needs positive feature counts");
  if (input != in_)
    return shape_mismatch(describe() + " expects " + std::to_string(in_) +
                          " input features but gets " + std::to_string(input));
  return out_;
}

std::vector<parameter_spec> linear::parameter_specs() const {
  std::vector<parameter_spec> specs{{"weight", {in_, out_}}};
  if (has_bias_)
    specs.push_back({"bias", {out_}});
  return specs;
}

void linear::initialize(std::vector<tensor>& params, rng& gen) const {
  float bound = 1.0f / std::sqrt(static_cast<float>(in_));
  for (auto& p : params) {
    float* v = p.data();
    for (int64_t i = 0; i < p.numel(); ++i)
      v[i] = gen.uniform(-bound, bound);
  }
}

void linear::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (has_bias_) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

const tensor& linear::forward(const tensor& x, const forward_context& ctx) {
  input_ = &x;
  ensure(output_, {x.size(0), out_}, x.where());
  ops::matmul(x, false, weight_, false, output_, 1.0f, 0.0f, ctx.compute);
  if (fused_)
    ops::bias_activation(output_, has_bias_ ? bias_ : tensor(), fused_kind_);
  else if (has_bias_)
    ops::add_bias(output_, bias_);
  return output_;
}

const tensor& linear::backward(const tensor& dy_out, const backward_context& ctx) {
  const tensor& x = *input_;
  // Fused: through the activation first, from its output (output_).
  const tensor* through = &dy_out;
  if (fused_) {
    ensure(activation_grad_, dy_out.shape(), dy_out.where());
    ops::activation_backward(fused_kind_, output_, output_, dy_out, activation_grad_);
    through = &activation_grad_;
  }
  const tensor& dy = *through;
  // dW (+)= x^T dy, db (+)= column sums of dy.
  float beta = ctx.accumulate ? 1.0f : 0.0f;
  ops::matmul(x, true, dy, false, weight_grad_, 1.0f, beta, ctx.compute);
  if (has_bias_)
    ops::sum_rows(dy, bias_grad_, beta);
  if (!ctx.need_input_grad) {
    input_grad_ = tensor();
    return input_grad_;
  }
  ensure(input_grad_, {dy.size(0), in_}, dy.where());
  ops::matmul(dy, false, weight_, true, input_grad_, 1.0f, 0.0f, ctx.compute);
  return input_grad_;
}

} // namespace dtrain::nn
