#pragma once

#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/conv_kernels_cpu.hpp"

namespace dtrain::nn {

/// The CUDA kernels' view of a conv or pool window over `batch` images.
inline cuda::window2d batch_window(const conv_cpu::window& w, int64_t batch) {
  cuda::window2d g;
  g.batch = batch;
  g.channels = w.channels;
  g.in_h = w.in_h;
  g.in_w = w.in_w;
  g.out_h = w.out_h();
  g.out_w = w.out_w();
  g.kernel_h = w.kernel_h;
  g.kernel_w = w.kernel_w;
  g.stride_h = w.stride_h;
  g.stride_w = w.stride_w;
  g.pad_h = w.pad_h;
  g.pad_w = w.pad_w;
  g.dilation_h = w.dilation_h;
  g.dilation_w = w.dilation_w;
  return g;
}

} // namespace dtrain::nn
