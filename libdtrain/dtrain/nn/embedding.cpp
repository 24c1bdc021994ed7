#include "dtrain/nn/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

std::string embedding::describe() const {
  return "embedding(" + std::to_string(vocab_) + ", " + std::to_string(dim_) + ")";
}

result<int64_t> embedding::output_features(int64_t input) const {
  if (vocab_ <= 0 || dim_ <= 0)
    return invalid_argument(describe() + " needs a positive vocabulary and dimension");
  if (input <= 0 || input > std::numeric_limits<int64_t>::max() / dim_)
    return shape_mismatch(describe() + " cannot take " + std::to_string(input) + " indices");
  return input * dim_;
}

std::vector<parameter_spec> embedding::parameter_specs() const {
  return {{"weight", {vocab_, dim_}}};
}

void embedding::initialize(std::vector<tensor>& params, rng& gen) const {
  float* w = params[0].data();
  for (int64_t i = 0; i < params[0].numel(); ++i)
    w[i] = gen.normal();
}

void embedding::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  weight_ = params[0];
  weight_grad_ = grads[0];
}

bool embedding::valid_index(float v) const {
  return v >= 0.0f && v < static_cast<float>(vocab_) && v == std::floor(v);
}

status embedding::index_error(float v, int64_t row, int64_t position) const {
  char text[160];
  std::snprintf(text, sizeof text, ": index %g at row %lld, position %lld is not in [0, %lld)",
                static_cast<double>(v), static_cast<long long>(row),
                static_cast<long long>(position), static_cast<long long>(vocab_));
  return status(error_code::out_of_range, describe() + text);
}

const tensor& embedding::forward(const tensor& x, const forward_context&) {
  input_ = &x;
  const int64_t rows = x.size(0), k = x.size(1);
  ensure(output_, {rows, k * dim_}, x.where());
  if (x.is_cuda())
    return forward_cuda(x);
  error_ = status::ok();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      float v = x.data()[r * k + j];
      float* out = output_.data() + (r * k + j) * dim_;
      if (!valid_index(v)) {
        if (error_.is_ok())
          error_ = index_error(v, r, j);
        std::fill(out, out + dim_, 0.0f);
        continue;
      }
      const float* row = weight_.data() + static_cast<int64_t>(v) * dim_;
      std::copy(row, row + dim_, out);
    }
  return output_;
}

const tensor& embedding::backward(const tensor& dy, const backward_context& ctx) {
  if (!ctx.accumulate)
    ops::fill(weight_grad_, 0.0f);
  if (ctx.need_input_grad) {
    ensure(input_grad_, input_->shape(), dy.where());
    ops::fill(input_grad_, 0.0f);  // indices are not differentiable
  } else {
    input_grad_ = tensor();
  }
  if (!error_.is_ok())
    return input_grad_;  // model::forward failed: there is no backward to do
  if (dy.is_cuda())
    return backward_cuda(dy);
  const int64_t rows = input_->size(0), k = input_->size(1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      auto index = static_cast<int64_t>(input_->data()[r * k + j]);
      const float* g = dy.data() + (r * k + j) * dim_;
      float* dw = weight_grad_.data() + index * dim_;
      for (int64_t d = 0; d < dim_; ++d)
        dw[d] += g[d];
    }
  return input_grad_;
}

} // namespace dtrain::nn
