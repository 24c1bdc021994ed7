#pragma once

#include <cstdint>
#include <string>

#include "dtrain/nn/conv_kernels_cpu.hpp"
#include "dtrain/nn/module.hpp"

namespace dtrain::nn {

/// The spatial shape of one sample's activations. Layout (for every layer
/// in conv.hpp and pooling.hpp): NCHW, carried flat in the [batch, features]
/// tensors every module takes, so sample n, channel c, row r, column q is
/// element [n, (c * height + r) * width + q], features = C * H * W. The
/// images of data::load_fashion_mnist ([batch, 784]) are 1x28x28 as they
/// are. Flattening is implicit: a linear layer after a conv or pool takes
/// its [batch, C*H*W] output as is, with no layer in between, and reads the
/// features in the same C, H, W order as torch.flatten(x, 1).
struct image_shape {
  int64_t channels = 1;
  int64_t height = 1;
  int64_t width = 1;

  /// channels * height * width (callers check the sizes are positive).
  int64_t features() const { return channels * height * width; }
  /// "1x28x28" (C x H x W).
  std::string to_string() const;
  friend bool operator==(const image_shape& a, const image_shape& b) {
    return a.channels == b.channels && a.height == b.height && a.width == b.width;
  }
};

/// A 2-D convolution's window and options, as torch.nn.Conv2d's (per axis:
/// kernel, stride, zero padding on both sides, dilation).
struct conv2d_options {
  int64_t kernel_h = 3, kernel_w = 3;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  /// Input and output channels are split into this many groups, each
  /// convolved with its own filters; both counts must divide by it.
  int64_t groups = 1;
  bool bias = true;

  /// The same kernel, stride, padding and dilation on both axes.
  static conv2d_options square(int64_t kernel, int64_t stride = 1, int64_t padding = 0,
                               int64_t dilation = 1, int64_t groups = 1, bool bias = true);
};

/// torch.nn.Conv2d over NCHW activations (see image_shape for the layout).
///
/// Parameters: weight [out, in / groups, kernel_h, kernel_w] and bias [out],
/// as PyTorch stores them, initialized as PyTorch's default
/// (kaiming_uniform_ with a = sqrt(5)): both uniform in +-1/sqrt(fan_in),
/// fan_in = in / groups * kernel_h * kernel_w.
///
/// The layer is told its input's spatial shape when built and checks in
/// output_features() that its input has exactly that many features
/// (shape_mismatch naming the layer and both shapes) and that its options
/// make sense (invalid_argument otherwise). Output: [batch, out * OH * OW]
/// with OH = floor((H + 2 pad_h - dilation_h (kernel_h - 1) - 1) / stride_h) + 1
/// and OW alike.
///
/// CPU: the im2col columns of a chunk of samples (as many as fit in
/// column_budget floats, at least one) laid side by side, one sgemm per
/// group over the chunk, then the product back into NCHW rows; a chunk of
/// one sample writes the product in place. Backward reuses the forward's
/// columns when the whole batch fitted in one chunk and recomputes them
/// chunk by chunk otherwise: dW by one sgemm per chunk and group, dX by
/// sgemm into columns and col2im. The loops around the GEMMs (im2col,
/// col2im, the layout changes) run per sample in parallel_for, on the
/// threads OpenBLAS is given. CUDA (conv_cuda.cpp): one im2col of the whole
/// batch, kept for backward, and one GEMM per group over every sample at
/// once; backward reuses those columns for dW and col2im's dX. No
/// allocation once the batch size is stable. Not thread-safe, as every
/// module.
class conv2d final : public module {
public:
  /// Floats a chunk's columns may take: 1 MiB, about a core's L2 cache.
  /// Measured on the CNN step benchmark (2-core EPYC): whole-batch chunks
  /// (32 MiB) were about 20% slower than chunks of this size, the layout
  /// changes and col2im then streaming from memory instead of cache, and
  /// chunks of one sample no faster.
  static constexpr int64_t column_budget = int64_t{1} << 18;

  conv2d(image_shape input, int64_t out_channels, const conv2d_options& options);

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

  image_shape input_shape() const { return input_; }
  /// The output's C x OH x OW (meaningful once output_features() succeeded).
  image_shape output_shape() const;

private:
  status check_options() const;
  /// Samples per chunk of columns for a batch of `batch`.
  int64_t chunk_size(int64_t batch) const;
  /// The columns of `count` samples from x, side by side in col.
  void fill_columns(const float* x, int64_t count, float* col) const;
  // The CUDA path (conv_cuda.cpp), taken when the input is on a device.
  const tensor& forward_cuda(const tensor& x, precision compute);
  const tensor& backward_cuda(const tensor& dy, const backward_context& ctx);

  image_shape input_;
  int64_t out_channels_;
  conv2d_options options_;
  conv_cpu::window window_;
  bool identity_columns_;
  tensor weight_, bias_, weight_grad_, bias_grad_;
  const tensor* input_tensor_ = nullptr;
  tensor output_, input_grad_, col_, col_grad_;
  // A chunk's GEMM product [out, count * P], or its output gradient in that
  // layout.
  tensor product_;
  bool columns_cover_batch_ = false;
  // CUDA only: the output and its gradient as [out_channels, batch * OH * OW].
  tensor channel_major_, channel_major_grad_;
};

} // namespace dtrain::nn
