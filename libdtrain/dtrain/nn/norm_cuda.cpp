// The normalization layers' CUDA path. layer_norm runs wholly on the
// device. batch_norm reduces each channel on the device and brings the
// per-channel sums (a few values per channel) to the host, where the
// statistics, the cross-replica reduction and the running update are those
// of the CPU path (the same member functions); the per-channel mean and
// inv_std then go back for the element-wise kernels.
#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/norm.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

namespace {

void to_host(const double* device_values, std::vector<double>& host, size_t count) {
  cuda::copy(host.data(), device_values, count * sizeof(double),
             cuda::copy_kind::device_to_host);
}

void to_device(const std::vector<double>& host, double* device_values) {
  cuda::copy(device_values, host.data(), host.size() * sizeof(double),
             cuda::copy_kind::host_to_device);
}

} // namespace

// ---- layer_norm --------------------------------------------------------------

const tensor& layer_norm::forward_cuda(const tensor& x) {
  const int64_t rows = x.size(0);
  error_ = status::ok();
  ensure(output_, {rows, features_}, x.where());
  ensure(normalized_, {rows, features_}, x.where());
  ensure(inv_std_, {rows}, x.where());
  cuda::layer_norm_forward(x.data(), weight_.data(), bias_.data(), eps_, normalized_.data(),
                           inv_std_.data(), output_.data(), rows, features_);
  return output_;
}

const tensor& layer_norm::backward_cuda(const tensor& dy, const backward_context& ctx) {
  const int64_t rows = dy.size(0);
  if (ctx.need_input_grad)
    ensure(input_grad_, {rows, features_}, dy.where());
  else
    input_grad_ = tensor();
  cuda::layer_norm_backward(dy.data(), normalized_.data(), inv_std_.data(), weight_.data(),
                            weight_grad_.data(), bias_grad_.data(),
                            ctx.need_input_grad ? input_grad_.data() : nullptr, rows,
                            features_);
  return input_grad_;
}

// ---- batch_norm --------------------------------------------------------------

status batch_norm::compute_statistics_cuda(const tensor& x, bool training) {
  const int64_t rows = x.size(0);
  const auto channels = static_cast<size_t>(channels_);
  mean_.assign(channels, 0.0);
  inv_std_.assign(channels, 0.0);
  // The running statistics on the host: 2 * channels floats.
  std::vector<float> running_mean = running_mean_.to_vector();
  std::vector<float> running_var = running_var_.to_vector();
  if (!training) {
    running_statistics(running_mean.data(), running_var.data());
    return status::ok();
  }
  double* device_mean = device_stats_.get_as<double>(4 * channels, x.where().index);
  double* device_sums = device_mean + 2 * channels;
  std::vector<double> sums(channels + 1, 0.0);
  cuda::batch_norm_channel_sums(x.data(), nullptr, 1, device_sums, rows, channels_, spatial_);
  to_host(device_sums, sums, channels);
  sums[channels] = static_cast<double>(rows * spatial_);
  DTRAIN_RETURN_IF_ERROR(reduce(sums));
  count_ = sums[channels];
  if (count_ < 2)
    return too_few_values(rows);
  for (size_t c = 0; c < channels; ++c)
    mean_[c] = sums[c] / count_;
  to_device(mean_, device_mean);
  std::vector<double> squares(channels, 0.0);
  cuda::batch_norm_channel_sums(x.data(), device_mean, 2, device_sums, rows, channels_,
                                spatial_);
  to_host(device_sums, squares, channels);
  DTRAIN_RETURN_IF_ERROR(reduce(squares));
  finish_statistics(squares, running_mean.data(), running_var.data());
  running_mean_.copy_from(tensor::from_vector(running_mean, {channels_}));
  running_var_.copy_from(tensor::from_vector(running_var, {channels_}));
  return status::ok();
}

const tensor& batch_norm::forward_cuda(const tensor& x, bool training) {
  const int64_t rows = x.size(0), f = channels_ * spatial_;
  ensure(output_, {rows, f}, x.where());
  batch_statistics_ = training;
  error_ = compute_statistics_cuda(x, training);
  if (!error_.is_ok()) {
    ops::fill(output_, 0.0f);
    return output_;
  }
  ensure(normalized_, {rows, f}, x.where());
  const auto channels = static_cast<size_t>(channels_);
  double* device_mean = device_stats_.get_as<double>(4 * channels, x.where().index);
  double* device_inv_std = device_mean + channels;
  to_device(mean_, device_mean);
  to_device(inv_std_, device_inv_std);
  cuda::batch_norm_normalize(x.data(), device_mean, device_inv_std, weight_.data(),
                             bias_.data(), normalized_.data(), output_.data(), rows, channels_,
                             spatial_);
  return output_;
}

const tensor& batch_norm::backward_cuda(const tensor& dy, const backward_context& ctx) {
  const int64_t rows = dy.size(0), f = channels_ * spatial_;
  const auto channels = static_cast<size_t>(channels_);
  double* device_mean = device_stats_.get_as<double>(4 * channels, dy.where().index);
  double* device_inv_std = device_mean + channels;
  double* device_sums = device_mean + 2 * channels;
  // Per channel: sum(dy) and sum(dy * xhat), this replica's for the weight
  // and bias gradients, the group's for dL/dx.
  cuda::batch_norm_grad_sums(dy.data(), normalized_.data(), device_sums, rows, channels_,
                             spatial_);
  cuda::batch_norm_param_grads(device_sums, weight_grad_.data(), bias_grad_.data(), channels_);
  if (!ctx.need_input_grad) {
    input_grad_ = tensor();
    return input_grad_;
  }
  ensure(input_grad_, {rows, f}, dy.where());
  if (batch_statistics_ && reduce_) {
    std::vector<double> sums(2 * channels, 0.0);
    to_host(device_sums, sums, 2 * channels);
    if (error_ = reduce(sums); !error_.is_ok())
      return input_grad_;
    to_device(sums, device_sums);
  }
  // device_inv_std still holds forward's values: no forward came in between.
  cuda::batch_norm_input_grad(dy.data(), normalized_.data(), weight_.data(), device_sums,
                              device_inv_std, count_, batch_statistics_, input_grad_.data(),
                              rows, channels_, spatial_);
  return input_grad_;
}

} // namespace dtrain::nn
