#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/conv.hpp"

namespace dtrain::nn {

/// Max or average pooling over NCHW activations (layout: see image_shape),
/// as torch.nn.MaxPool2d / AvgPool2d with ceil_mode = false and no
/// dilation. Padding is at most half the kernel on each axis (PyTorch's
/// rule), so every window holds at least one input pixel.
///
/// max: the padding counts as -infinity; backward routes each output's
/// gradient to the (first) maximum of its window, remembered by forward.
/// average: sum / (kernel_h * kernel_w), the padding counting as zeros
/// (PyTorch's default count_include_pad = true); backward spreads each
/// gradient evenly over its window.
///
/// Built with its input's shape, checked by output_features() as conv2d
/// does (shape_mismatch for a wrong feature count, invalid_argument for a
/// window that does not fit). No parameters. On CPU and CUDA (one thread per
/// output over the whole batch, pooling_cuda.cpp; the backward scatters with
/// atomic adds, so overlapping windows sum in no fixed order). Buffers are
/// reused while the batch size stays the same. Not thread-safe.
class pool2d final : public module {
public:
  enum class kind { max, average };

  struct options {
    int64_t kernel_h = 2, kernel_w = 2;
    /// 0: the kernel size (PyTorch's default stride).
    int64_t stride_h = 0, stride_w = 0;
    int64_t pad_h = 0, pad_w = 0;
  };

  /// `name` is what describe() calls the layer ("max_pool2d",
  /// "global_avg_pool").
  pool2d(kind k, image_shape input, const options& opts, std::string name);

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

  image_shape input_shape() const { return input_; }
  image_shape output_shape() const;

private:
  // The CUDA path (pooling_cuda.cpp), taken when the input is on a device.
  const tensor& forward_cuda(const tensor& x);
  const tensor& backward_cuda(const tensor& dy);

  kind kind_;
  image_shape input_;
  options options_;
  std::string name_;
  conv_cpu::window window_;
  const tensor* input_tensor_ = nullptr;
  tensor output_, input_grad_;
  std::vector<int64_t> argmax_;
  cuda::device_scratch device_argmax_;  // argmax_ of a CUDA forward
};

/// torch.nn.MaxPool2d(kernel, stride, padding); stride 0 means the kernel.
std::unique_ptr<pool2d> max_pool2d(image_shape input, int64_t kernel, int64_t stride = 0,
                                   int64_t padding = 0);
/// torch.nn.AvgPool2d(kernel, stride, padding) (count_include_pad = true).
std::unique_ptr<pool2d> avg_pool2d(image_shape input, int64_t kernel, int64_t stride = 0,
                                   int64_t padding = 0);
/// The mean of each channel: [batch, C*H*W] -> [batch, C], as
/// torch.nn.AdaptiveAvgPool2d(1) followed by a flatten.
std::unique_ptr<pool2d> global_avg_pool(image_shape input);

} // namespace dtrain::nn
