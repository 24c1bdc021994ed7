#pragma once

#include <cstddef>
#include <cstdint>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/runtime.hpp"

/// The CUDA kernels behind the layers of nn/conv.hpp, nn/pooling.hpp,
/// nn/norm.hpp and nn/embedding.hpp (their GEMMs go through ops::matmul).
/// Device pointers throughout; activations are NCHW as image_shape says,
/// over the whole batch. Each function returns at once for an empty input,
/// else enqueues its kernels on the current device's default stream,
/// checks the launches (aborting with the kernel's name, as cuda/kernels.cu
/// does) and returns without waiting. Kernels loop grid-stride with 64-bit
/// indices, so any size works. Nothing is validated here: the layers check
/// their geometry when they are built.
///
/// In a CPU-only build these exist too (layer_kernels_stub.cpp) and abort
/// as broken invariants: such a build never hands out a device pointer.
namespace dtrain::cuda {

/// A 2-D sliding window over a batch of NCHW images (convolution or
/// pooling), with its output size already computed.
struct window2d {
  int64_t batch = 0, channels = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

// ---- convolution ------------------------------------------------------------

/// col [channels * kernel_h * kernel_w, batch * out_h * out_w]: row (c, i, j)
/// holds, for every sample n and output position p (column n * P + p), the
/// pixel under tap (i, j) of channel c, 0 in the padding. The whole batch
/// in one matrix, so one GEMM per group covers every sample.
void im2col(const window2d& g, const float* x, float* col);
/// The adjoint of im2col: x = sum over the taps that read each pixel
/// (overwritten). Each thread gathers one pixel's taps: no atomics.
void col2im(const window2d& g, const float* col, float* x);
/// dst [batch, channels, positions] = src [channels, batch * positions]
/// (+ bias[channel] when bias is not null).
void channels_to_batch(const float* src, const float* bias, float* dst, int64_t batch,
                       int64_t channels, int64_t positions);
/// dst [channels, batch * positions] = src [batch, channels, positions].
void batch_to_channels(const float* src, float* dst, int64_t batch, int64_t channels,
                       int64_t positions);
/// out[c] = beta * out[c] + sum over n, p of x [batch, channels, positions]
/// (beta == 0 ignores what out held).
void channel_sums(const float* x, float* out, int64_t batch, int64_t channels,
                  int64_t positions, float beta);

// ---- pooling ----------------------------------------------------------------

/// y [batch, channels, out_h, out_w] = each window's maximum, the padding
/// counting as -infinity; argmax gets its index into the sample's image
/// (c * in_h * in_w + h * in_w + w), the first on ties; the first NaN wins.
void max_pool(const window2d& g, const float* x, float* y, int64_t* argmax);
/// dx = 0, then dx[sample, argmax] += dy (atomically: windows may overlap).
void max_pool_backward(const window2d& g, const float* dy, const int64_t* argmax, float* dx);
/// y = window sum / (kernel_h * kernel_w), the padding counting as zeros.
void avg_pool(const window2d& g, const float* x, float* y);
/// The adjoint of avg_pool (dx overwritten).
void avg_pool_backward(const window2d& g, const float* dy, float* dx);

// ---- normalization ----------------------------------------------------------

/// Per channel of x [batch, channels, spatial], in double:
/// sums[c] = sum of (x - shift[c])^power, power 1 or 2; shift may be null
/// (no shift).
void batch_norm_channel_sums(const float* x, const double* shift, int power, double* sums,
                             int64_t batch, int64_t channels, int64_t spatial);
/// xhat = (x - mean[c]) * inv_std[c]; y = xhat * weight[c] + bias[c].
void batch_norm_normalize(const float* x, const double* mean, const double* inv_std,
                          const float* weight, const float* bias, float* xhat, float* y,
                          int64_t batch, int64_t channels, int64_t spatial);
/// sums[c] = sum dy, sums[channels + c] = sum dy * xhat, in double.
void batch_norm_grad_sums(const float* dy, const float* xhat, double* sums, int64_t batch,
                          int64_t channels, int64_t spatial);
/// bias_grad[c] += sums[c]; weight_grad[c] += sums[channels + c].
void batch_norm_param_grads(const double* sums, float* weight_grad, float* bias_grad,
                            int64_t channels);
/// dx of the batch norm, as the CPU computes it: with batch statistics,
/// inv_std / count * (count g - w sums[c] - xhat w sums[C + c]) with
/// g = dy * w; with running statistics g * inv_std.
void batch_norm_input_grad(const float* dy, const float* xhat, const float* weight,
                           const double* sums, const double* inv_std, double count,
                           bool batch_statistics, float* dx, int64_t batch, int64_t channels,
                           int64_t spatial);

/// Row r of x [rows, features]: mean and biased variance in double,
/// inv_std[r], xhat, y = xhat * weight + bias.
void layer_norm_forward(const float* x, const float* weight, const float* bias, float eps,
                        float* xhat, float* inv_std, float* y, int64_t rows,
                        int64_t features);
/// weight_grad[j] += sum_r dy xhat, bias_grad[j] += sum_r dy; and, when dx
/// is not null, dx per row as the CPU's layer_norm computes it.
void layer_norm_backward(const float* dy, const float* xhat, const float* inv_std,
                         const float* weight, float* weight_grad, float* bias_grad, float* dx,
                         int64_t rows, int64_t features);

// ---- embedding --------------------------------------------------------------

/// y[i, :] = weight[index[i], :] for each of `count` indices (float values,
/// already checked to be whole numbers in [0, vocab) by the caller); an
/// index outside gives a zero row all the same.
void embedding_forward(const float* index, const float* weight, float* y, int64_t count,
                       int64_t vocab, int64_t dim);
/// weight_grad[index[i], :] += dy[i, :] (atomically: indices repeat).
void embedding_backward(const float* index, const float* dy, float* weight_grad,
                        int64_t count, int64_t vocab, int64_t dim);

// ---- scratch ----------------------------------------------------------------

/// Raw device memory for what a float tensor cannot hold (int64 argmax
/// indices, double statistics), grown on demand and never shrunk. Owns its
/// allocation; not thread-safe, as the layers that hold one. Never used in
/// a CPU-only build (nothing runs on a device there).
class device_scratch {
public:
  device_scratch() = default;
  ~device_scratch() { device_free(ptr_); }
  device_scratch(const device_scratch&) = delete;
  device_scratch& operator=(const device_scratch&) = delete;

  /// At least `bytes` on cuda:`index`; aborts when the device memory cannot
  /// be had (as tensor::empty does for the layers' other buffers).
  void* get(size_t bytes, int index) {
    if (ptr_ != nullptr && bytes <= bytes_ && index == index_)
      return ptr_;
    device_free(ptr_);
    ptr_ = nullptr;
    auto made = device_malloc(bytes == 0 ? 1 : bytes, index);
    DTRAIN_CHECK(made.is_ok(), made.error().to_string().c_str());
    ptr_ = *made;
    bytes_ = bytes;
    index_ = index;
    return ptr_;
  }
  template <typename T>
  T* get_as(size_t count, int index) {
    return static_cast<T*>(get(count * sizeof(T), index));
  }

private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int index_ = -1;
};

} // namespace dtrain::cuda
