#pragma once

#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/module.hpp"

/// Normalization layers, on CPU and CUDA (norm_cuda.cpp: the same formulas,
/// reductions in double on the device; batch_norm's small per-channel sums
/// come back to the host, where the statistics, the running update and any
/// cross-replica reduction are computed exactly as on the CPU).
namespace dtrain::nn {

/// torch.nn.LayerNorm over the last dimension of x [batch, features]:
/// y[b, f] = (x[b, f] - mean_b) / sqrt(var_b + eps) * weight[f] + bias[f],
/// mean_b and the biased var_b over row b's features. Parameters "weight"
/// [features] (initialized to 1) and "bias" [features] (0). Statistics are
/// accumulated in double. Any batch size, including 1.
class layer_norm final : public module {
public:
  explicit layer_norm(int64_t features, float eps = 1e-5f) : features_(features), eps_(eps) {}

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  status last_status() const override { return error_; }
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  // The CUDA path (norm_cuda.cpp), taken when the input is on a device.
  const tensor& forward_cuda(const tensor& x);
  const tensor& backward_cuda(const tensor& dy, const backward_context& ctx);

  int64_t features_;
  float eps_;
  tensor weight_, bias_, weight_grad_, bias_grad_;
  tensor output_, normalized_, inv_std_, input_grad_;
  status error_;
};

/// torch.nn.BatchNorm1d (height = width = 1) or BatchNorm2d over x
/// [batch, channels * height * width], each row one sample in NCHW order:
/// feature c * height * width + h * width + w belongs to channel c.
///
/// Training (forward_context.training): each channel is normalized by the
/// mean and biased variance of its batch * height * width values, which
/// must be more than one (batch 1 of a BatchNorm1d is an invalid_argument,
/// as in PyTorch); the running statistics, buffers "running_mean" (starts
/// at 0) and "running_var" (starts at 1), move by `momentum`:
/// running = (1 - momentum) * running + momentum * batch_value, with the
/// unbiased variance (count / (count - 1)), as PyTorch does. Evaluation
/// normalizes with the running statistics and leaves them alone.
/// Parameters "weight" [channels] (1) and "bias" [channels] (0).
/// Each replica's batch statistics are its own, unless a statistics
/// reducer is set (torch.nn.SyncBatchNorm): then training normalizes by the
/// mean and variance of the whole group's batch (two reductions of
/// `channels` + 1 and `channels` values: sums, then squared deviations from
/// the group mean, for accuracy), and backward reduces the two per-channel
/// sums dL/dx needs (2 * channels values), so dL/dx is the gradient of the
/// sum of every replica's loss. The weight and bias gradients stay this
/// replica's: the gradient sync averages them like any other. Every
/// replica must then run the same number of training forwards and
/// backwards; a failed reduction is last_status()'s error.
class batch_norm final : public module {
public:
  explicit batch_norm(int64_t channels, int64_t height = 1, int64_t width = 1,
                      float momentum = 0.1f, float eps = 1e-5f);

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  std::vector<buffer_spec> buffer_specs() const override;
  void bind_buffers(std::vector<tensor> buffers) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  status last_status() const override { return error_; }
  void set_statistics_reducer(const statistics_reducer& reduce) override { reduce_ = reduce; }
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  /// Fills mean_ and inv_std_ from the batch (the group's with a reducer)
  /// and moves the running statistics, or takes the running statistics.
  status compute_statistics(const tensor& x, bool training);
  /// The group's sums, in place, when synchronized.
  status reduce(std::vector<double>& values);
  /// From the group's squared deviations: inv_std_, and the running
  /// statistics (host pointers) moved by momentum.
  void finish_statistics(const std::vector<double>& squares, float* running_mean,
                         float* running_var);
  /// The error of a training batch with fewer than 2 values per channel.
  status too_few_values(int64_t rows) const;
  /// mean_ and inv_std_ from the running statistics (host pointers).
  void running_statistics(const float* running_mean, const float* running_var);
  // The CUDA path (norm_cuda.cpp), taken when the input is on a device.
  const tensor& forward_cuda(const tensor& x, bool training);
  status compute_statistics_cuda(const tensor& x, bool training);
  const tensor& backward_cuda(const tensor& dy, const backward_context& ctx);

  int64_t channels_, spatial_;
  int64_t height_, width_;
  float momentum_, eps_;
  tensor weight_, bias_, weight_grad_, bias_grad_;
  tensor running_mean_, running_var_;
  tensor output_, normalized_, input_grad_;
  std::vector<double> mean_, inv_std_;  // per channel, of the last forward
  bool batch_statistics_ = false;       // the last forward was in training
  double count_ = 0;                    // values per channel in them (the group's)
  statistics_reducer reduce_;
  tensor reduce_scratch_;
  // CUDA only: mean, inv_std (channels each) and sums (2 channels), double.
  cuda::device_scratch device_stats_;
  status error_;
};

} // namespace dtrain::nn
