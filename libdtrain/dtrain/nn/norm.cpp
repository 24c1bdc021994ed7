#include "dtrain/nn/norm.hpp"

#include <cmath>

#include "dtrain/core/check.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

namespace {

void fill_params(std::vector<tensor>& params) {
  ops::fill(params[0], 1.0f);
  ops::fill(params[1], 0.0f);
}

// dx of a normalization over groups of `count` values given xhat and
// g = dy * weight: dx = inv_std / count * (count * g - sum g - xhat * sum(g * xhat)).
float normalized_input_grad(double g, double xhat, double sum_g, double sum_gx, double inv_std,
                            double count) {
  return static_cast<float>(inv_std / count * (count * g - sum_g - xhat * sum_gx));
}

} // namespace

// ---- layer_norm --------------------------------------------------------------

std::string layer_norm::describe() const { return "layer_norm(" + std::to_string(features_) + ")"; }

result<int64_t> layer_norm::output_features(int64_t input) const {
  if (features_ <= 0 || !(eps_ > 0.0f))
    return invalid_argument(describe() + " needs positive features and eps");
  if (input != features_)
    return shape_mismatch(describe() + " expects " + std::to_string(features_) +
                          " input features but gets " + std::to_string(input));
  return features_;
}

std::vector<parameter_spec> layer_norm::parameter_specs() const {
  return {{"weight", {features_}}, {"bias", {features_}}};
}

void layer_norm::initialize(std::vector<tensor>& params, rng&) const { fill_params(params); }

void layer_norm::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  weight_ = params[0];
  bias_ = params[1];
  weight_grad_ = grads[0];
  bias_grad_ = grads[1];
}

const tensor& layer_norm::forward(const tensor& x, const forward_context&) {
  const int64_t rows = x.size(0), f = features_;
  if (x.is_cuda())
    return forward_cuda(x);
  error_ = status::ok();
  ensure(output_, {rows, f}, x.where());
  ensure(normalized_, {rows, f}, x.where());
  ensure(inv_std_, {rows}, x.where());
  const float* w = weight_.data();
  const float* b = bias_.data();
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * f;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < f; ++j)
      mean += in[j];
    mean /= static_cast<double>(f);
    for (int64_t j = 0; j < f; ++j)
      var += (in[j] - mean) * (in[j] - mean);
    var /= static_cast<double>(f);
    double inv_std = 1.0 / std::sqrt(var + eps_);
    inv_std_.data()[r] = static_cast<float>(inv_std);
    float* xhat = normalized_.data() + r * f;
    float* out = output_.data() + r * f;
    for (int64_t j = 0; j < f; ++j) {
      xhat[j] = static_cast<float>((in[j] - mean) * inv_std);
      out[j] = xhat[j] * w[j] + b[j];
    }
  }
  return output_;
}

const tensor& layer_norm::backward(const tensor& dy, const backward_context& ctx) {
  const int64_t rows = dy.size(0), f = features_;
  if (!ctx.accumulate) {
    ops::fill(weight_grad_, 0.0f);
    ops::fill(bias_grad_, 0.0f);
  }
  if (!error_.is_ok())
    return input_grad_;  // model::forward failed: there is no backward to do
  if (dy.is_cuda())
    return backward_cuda(dy, ctx);
  float* dw = weight_grad_.data();
  float* db = bias_grad_.data();
  const float* w = weight_.data();
  if (ctx.need_input_grad)
    ensure(input_grad_, {rows, f}, dy.where());
  else
    input_grad_ = tensor();
  for (int64_t r = 0; r < rows; ++r) {
    const float* g_out = dy.data() + r * f;
    const float* xhat = normalized_.data() + r * f;
    double sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < f; ++j) {
      dw[j] += g_out[j] * xhat[j];
      db[j] += g_out[j];
      double g = static_cast<double>(g_out[j]) * w[j];
      sum_g += g;
      sum_gx += g * xhat[j];
    }
    if (!ctx.need_input_grad)
      continue;
    float* dx = input_grad_.data() + r * f;
    for (int64_t j = 0; j < f; ++j)
      dx[j] = normalized_input_grad(static_cast<double>(g_out[j]) * w[j], xhat[j], sum_g,
                                    sum_gx, inv_std_.data()[r], static_cast<double>(f));
  }
  return input_grad_;
}

// ---- batch_norm --------------------------------------------------------------

batch_norm::batch_norm(int64_t channels, int64_t height, int64_t width, float momentum, float eps)
  : channels_(channels), spatial_(height * width), height_(height), width_(width),
    momentum_(momentum), eps_(eps) {}

std::string batch_norm::describe() const {
  if (height_ == 1 && width_ == 1)
    return "batch_norm1d(" + std::to_string(channels_) + ")";
  return "batch_norm2d(" + std::to_string(channels_) + ", " + std::to_string(height_) + "x" +
         std::to_string(width_) + ")";
}

result<int64_t> batch_norm::output_features(int64_t input) const {
  if (channels_ <= 0 || height_ <= 0 || width_ <= 0 || !(eps_ > 0.0f) ||
      !(momentum_ >= 0.0f && momentum_ <= 1.0f))
    return invalid_argument(describe() +
                            " needs positive channels, height, width and eps, and momentum in [0, 1]");
  if (input != channels_ * spatial_)
    return shape_mismatch(describe() + " expects " + std::to_string(channels_ * spatial_) +
                          " input features (channels * height * width) but gets " +
                          std::to_string(input));
  return input;
}

std::vector<parameter_spec> batch_norm::parameter_specs() const {
  return {{"weight", {channels_}}, {"bias", {channels_}}};
}

void batch_norm::initialize(std::vector<tensor>& params, rng&) const { fill_params(params); }

void batch_norm::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  weight_ = params[0];
  bias_ = params[1];
  weight_grad_ = grads[0];
  bias_grad_ = grads[1];
}

std::vector<buffer_spec> batch_norm::buffer_specs() const {
  return {{"running_mean", {channels_}, 0.0f}, {"running_var", {channels_}, 1.0f}};
}

void batch_norm::bind_buffers(std::vector<tensor> buffers) {
  running_mean_ = buffers[0];
  running_var_ = buffers[1];
}

status batch_norm::reduce(std::vector<double>& values) {
  if (!reduce_)
    return status::ok();
  const auto n = static_cast<int64_t>(values.size());
  ensure(reduce_scratch_, {n}, device::cpu());
  for (int64_t i = 0; i < n; ++i)
    reduce_scratch_.data()[i] = static_cast<float>(values[i]);
  DTRAIN_RETURN_IF_ERROR(reduce_(reduce_scratch_).with_context(describe() + " (synchronized)"));
  for (int64_t i = 0; i < n; ++i)
    values[i] = reduce_scratch_.data()[i];
  return status::ok();
}

status batch_norm::compute_statistics(const tensor& x, bool training) {
  const int64_t rows = x.size(0), f = channels_ * spatial_;
  mean_.assign(channels_, 0.0);
  inv_std_.assign(channels_, 0.0);
  if (!training) {
    running_statistics(running_mean_.data(), running_var_.data());
    return status::ok();
  }
  // Sums per channel and the count, then squared deviations from the mean:
  // with a reducer, both over the whole group.
  std::vector<double> sums(channels_ + 1, 0.0);
  for (int64_t c = 0; c < channels_; ++c)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial_; ++s)
        sums[c] += x.data()[r * f + c * spatial_ + s];
  sums[channels_] = static_cast<double>(rows * spatial_);
  DTRAIN_RETURN_IF_ERROR(reduce(sums));
  count_ = sums[channels_];
  if (count_ < 2)
    return too_few_values(rows);
  std::vector<double> squares(channels_, 0.0);
  for (int64_t c = 0; c < channels_; ++c) {
    mean_[c] = sums[c] / count_;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial_; ++s) {
        double d = x.data()[r * f + c * spatial_ + s] - mean_[c];
        squares[c] += d * d;
      }
  }
  DTRAIN_RETURN_IF_ERROR(reduce(squares));
  finish_statistics(squares, running_mean_.data(), running_var_.data());
  return status::ok();
}

status batch_norm::too_few_values(int64_t rows) const {
  return invalid_argument(describe() +
                          " in training needs more than one value per channel, got batch " +
                          std::to_string(rows));
}

void batch_norm::running_statistics(const float* running_mean, const float* running_var) {
  for (int64_t c = 0; c < channels_; ++c) {
    mean_[c] = running_mean[c];
    inv_std_[c] = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps_);
  }
}

void batch_norm::finish_statistics(const std::vector<double>& squares, float* running_mean,
                                   float* running_var) {
  for (int64_t c = 0; c < channels_; ++c) {
    const double var = squares[c] / count_;
    inv_std_[c] = 1.0 / std::sqrt(var + eps_);
    float& rm = running_mean[c];
    float& rv = running_var[c];
    rm = static_cast<float>((1.0 - momentum_) * rm + momentum_ * mean_[c]);
    rv = static_cast<float>((1.0 - momentum_) * rv + momentum_ * var * count_ / (count_ - 1.0));
  }
}

const tensor& batch_norm::forward(const tensor& x, const forward_context& ctx) {
  const int64_t rows = x.size(0), f = channels_ * spatial_;
  if (x.is_cuda())
    return forward_cuda(x, ctx.training);
  ensure(output_, {rows, f}, x.where());
  batch_statistics_ = ctx.training;
  error_ = compute_statistics(x, ctx.training);
  if (!error_.is_ok()) {
    ops::fill(output_, 0.0f);
    return output_;
  }
  ensure(normalized_, {rows, f}, x.where());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels_; ++c)
      for (int64_t s = 0; s < spatial_; ++s) {
        int64_t i = r * f + c * spatial_ + s;
        float xhat = static_cast<float>((x.data()[i] - mean_[c]) * inv_std_[c]);
        normalized_.data()[i] = xhat;
        output_.data()[i] = xhat * weight_.data()[c] + bias_.data()[c];
      }
  return output_;
}

const tensor& batch_norm::backward(const tensor& dy, const backward_context& ctx) {
  const int64_t rows = dy.size(0), f = channels_ * spatial_;
  if (!ctx.accumulate) {
    ops::fill(weight_grad_, 0.0f);
    ops::fill(bias_grad_, 0.0f);
  }
  if (!error_.is_ok())
    return input_grad_;  // model::forward failed: there is no backward to do
  if (dy.is_cuda())
    return backward_cuda(dy, ctx);
  if (ctx.need_input_grad)
    ensure(input_grad_, {rows, f}, dy.where());
  else
    input_grad_ = tensor();
  // Per channel: sum(dy) and sum(dy * xhat), this replica's for the weight
  // and bias gradients, the group's for dL/dx.
  std::vector<double> sums(2 * channels_, 0.0);
  for (int64_t c = 0; c < channels_; ++c)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial_; ++s) {
        int64_t i = r * f + c * spatial_ + s;
        sums[c] += dy.data()[i];
        sums[channels_ + c] += static_cast<double>(dy.data()[i]) * normalized_.data()[i];
      }
  for (int64_t c = 0; c < channels_; ++c) {
    bias_grad_.data()[c] += static_cast<float>(sums[c]);
    weight_grad_.data()[c] += static_cast<float>(sums[channels_ + c]);
  }
  if (!ctx.need_input_grad)
    return input_grad_;
  if (batch_statistics_)
    if (error_ = reduce(sums); !error_.is_ok())
      return input_grad_;
  for (int64_t c = 0; c < channels_; ++c) {
    const double w = weight_.data()[c];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < spatial_; ++s) {
        int64_t i = r * f + c * spatial_ + s;
        double g = dy.data()[i] * w;
        // With running statistics the normalization is a fixed affine map.
        input_grad_.data()[i] =
            batch_statistics_
                ? normalized_input_grad(g, normalized_.data()[i], sums[c] * w,
                                        sums[channels_ + c] * w, inv_std_[c], count_)
                : static_cast<float>(g * inv_std_[c]);
      }
  }
  return input_grad_;
}

} // namespace dtrain::nn
