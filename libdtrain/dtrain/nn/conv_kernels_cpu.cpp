#include "dtrain/nn/conv_kernels_cpu.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace dtrain::nn::conv_cpu {

namespace {

// C++ division truncates toward zero, so a window wider than the padded
// input would still count one position: say 0 instead.
int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  return span < 0 || stride < 1 ? 0 : span / stride + 1;
}

} // namespace

int64_t window::out_h() const { return out_size(in_h, kernel_h, stride_h, pad_h, dilation_h); }

int64_t window::out_w() const { return out_size(in_w, kernel_w, stride_w, pad_w, dilation_w); }

namespace {

// The output columns [first, last) whose tap at input offset `shift` (tap
// offset minus padding) lands inside [0, in): in = o * stride + shift.
// Computing the range once per row keeps the inner loops free of bounds
// checks, so they vectorize.
void valid_range(int64_t shift, int64_t stride, int64_t in, int64_t out, int64_t& first,
                 int64_t& last) {
  first = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  last = in - shift <= 0 ? 0 : (in - shift - 1) / stride + 1;
  first = std::min(first, out);
  last = std::clamp(last, first, out);
}

} // namespace

void im2col(const window& g, const float* image, float* col) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t shift_h = i * g.dilation_h - g.pad_h;
        const int64_t shift_w = j * g.dilation_w - g.pad_w;
        int64_t w0, w1;
        valid_range(shift_w, g.stride_w, g.in_w, ow, w0, w1);
        for (int64_t r = 0; r < oh; ++r, col += ow) {
          const int64_t ih = r * g.stride_h + shift_h;
          if (ih < 0 || ih >= g.in_h) {
            std::memset(col, 0, static_cast<size_t>(ow) * sizeof(float));
            continue;
          }
          const float* src = plane + ih * g.in_w;
          std::fill(col, col + w0, 0.0f);
          for (int64_t q = w0; q < w1; ++q)
            col[q] = src[q * g.stride_w + shift_w];
          std::fill(col + w1, col + ow, 0.0f);
        }
      }
    }
  }
}

void col2im(const window& g, const float* col, float* image) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  std::memset(image, 0, static_cast<size_t>(g.channels * g.in_h * g.in_w) * sizeof(float));
  for (int64_t c = 0; c < g.channels; ++c) {
    float* plane = image + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        const int64_t shift_h = i * g.dilation_h - g.pad_h;
        const int64_t shift_w = j * g.dilation_w - g.pad_w;
        int64_t w0, w1;
        valid_range(shift_w, g.stride_w, g.in_w, ow, w0, w1);
        for (int64_t r = 0; r < oh; ++r, col += ow) {
          const int64_t ih = r * g.stride_h + shift_h;
          if (ih < 0 || ih >= g.in_h)
            continue;
          float* dst = plane + ih * g.in_w;
          for (int64_t q = w0; q < w1; ++q)
            dst[q * g.stride_w + shift_w] += col[q];
        }
      }
    }
  }
}

// The pools walk each output position's window directly: their kernels are
// small (2x2, 3x3) and there is no GEMM to feed.
void max_pool(const window& g, const float* image, float* out, int64_t* argmax) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  for (int64_t c = 0; c < g.channels; ++c) {
    const int64_t base = c * g.in_h * g.in_w;
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t q = 0; q < ow; ++q) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t where = -1;
        for (int64_t i = 0; i < g.kernel_h; ++i) {
          const int64_t ih = r * g.stride_h - g.pad_h + i * g.dilation_h;
          if (ih < 0 || ih >= g.in_h)
            continue;
          for (int64_t j = 0; j < g.kernel_w; ++j) {
            const int64_t iw = q * g.stride_w - g.pad_w + j * g.dilation_w;
            if (iw < 0 || iw >= g.in_w)
              continue;
            const int64_t at = base + ih * g.in_w + iw;
            // The first NaN wins, as in PyTorch, so that a NaN is not hidden.
            const bool nan = image[at] != image[at];
            if (where < 0 || image[at] > best || (nan && best == best)) {
              best = image[at];
              where = at;
            }
          }
        }
        *out++ = best;
        *argmax++ = where;
      }
    }
  }
}

void max_pool_backward(const window& g, const float* dy, const int64_t* argmax,
                       float* image) {
  std::memset(image, 0, static_cast<size_t>(g.channels * g.in_h * g.in_w) * sizeof(float));
  const int64_t n = g.channels * g.out_h() * g.out_w();
  for (int64_t k = 0; k < n; ++k)
    if (argmax[k] >= 0)
      image[argmax[k]] += dy[k];
}

void avg_pool(const window& g, const float* image, float* out) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  const float inv = 1.0f / static_cast<float>(g.kernel_h * g.kernel_w);
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t q = 0; q < ow; ++q) {
        float total = 0.0f;
        for (int64_t i = 0; i < g.kernel_h; ++i) {
          const int64_t ih = r * g.stride_h - g.pad_h + i * g.dilation_h;
          if (ih < 0 || ih >= g.in_h)
            continue;
          for (int64_t j = 0; j < g.kernel_w; ++j) {
            const int64_t iw = q * g.stride_w - g.pad_w + j * g.dilation_w;
            if (iw >= 0 && iw < g.in_w)
              total += plane[ih * g.in_w + iw];
          }
        }
        *out++ = total * inv;
      }
    }
  }
}

void avg_pool_backward(const window& g, const float* dy, float* image) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  const float inv = 1.0f / static_cast<float>(g.kernel_h * g.kernel_w);
  std::memset(image, 0, static_cast<size_t>(g.channels * g.in_h * g.in_w) * sizeof(float));
  for (int64_t c = 0; c < g.channels; ++c) {
    float* plane = image + c * g.in_h * g.in_w;
    for (int64_t r = 0; r < oh; ++r) {
      for (int64_t q = 0; q < ow; ++q) {
        const float share = *dy++ * inv;
        for (int64_t i = 0; i < g.kernel_h; ++i) {
          const int64_t ih = r * g.stride_h - g.pad_h + i * g.dilation_h;
          if (ih < 0 || ih >= g.in_h)
            continue;
          for (int64_t j = 0; j < g.kernel_w; ++j) {
            const int64_t iw = q * g.stride_w - g.pad_w + j * g.dilation_w;
            if (iw >= 0 && iw < g.in_w)
              plane[ih * g.in_w + iw] += share;
          }
        }
      }
    }
  }
}

} // namespace dtrain::nn::conv_cpu
