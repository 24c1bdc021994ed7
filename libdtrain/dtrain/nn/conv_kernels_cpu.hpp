#pragma once

#include <cstdint>

/// The CPU loops behind nn::conv2d and the pooling layers: im2col/col2im for
/// one image, and pooling over one image. Host pointers; every image is one
/// sample's activations in NCHW order without the batch axis, i.e. channel
/// c's row r, column q at c * height * width + r * width + q. Nothing is
/// checked here: the layers validate the geometry when they are built.
namespace dtrain::nn::conv_cpu {

/// The geometry of a 2-D sliding window over one image (convolution or
/// pooling): per axis kernel, stride, zero padding on both sides and
/// dilation, and the resulting output size.
struct window {
  int64_t channels = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;

  /// floor((in + 2 pad - dilation (kernel - 1) - 1) / stride) + 1, as
  /// PyTorch; <= 0 when the window does not fit.
  int64_t out_h() const;
  int64_t out_w() const;
};

/// col [channels * kernel_h * kernel_w, out_h * out_w]: row (c, i, j) holds
/// the input pixel under kernel tap (i, j) of channel c for every output
/// position, 0 where the tap falls into the padding. `row_stride` is the
/// distance between col's rows: out_h * out_w (or 0, which means that)
/// packs one image; the convolution passes chunk * out_h * out_w to lay
/// the columns of `chunk` images side by side (image s at col + s * out_h *
/// out_w), so that one GEMM covers them all.
void im2col(const window& g, const float* image, float* col, int64_t row_stride = 0);
/// The adjoint of im2col: image = sum of col's entries over the taps that
/// read each pixel (image is overwritten, not added to). `row_stride` as
/// for im2col.
void col2im(const window& g, const float* col, float* image, int64_t row_stride = 0);

/// out [channels, out_h, out_w] = maximum over each window, the padding
/// counting as -infinity; argmax receives each maximum's index into image
/// (the first one on ties).
void max_pool(const window& g, const float* image, float* out, int64_t* argmax);
/// image = 0, then image[argmax[i]] += dy[i] (the max pool's backward).
void max_pool_backward(const window& g, const float* dy, const int64_t* argmax,
                       float* image);
/// out = sum over each window / (kernel_h * kernel_w): the padding counts as
/// zeros in the average (PyTorch's count_include_pad = true).
void avg_pool(const window& g, const float* image, float* out);
/// The adjoint of avg_pool (image is overwritten).
void avg_pool_backward(const window& g, const float* dy, float* image);

} // namespace dtrain::nn::conv_cpu
