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

// dst[q] = row[q * stride + shift] for q in [first, last), every index
// inside the row: a plain copy for stride 1, which vectorizes.
inline void gather(float* __restrict dst, const float* __restrict row, int64_t stride,
                   int64_t shift, int64_t first, int64_t last) {
  if (first >= last)
    return;
  if (stride == 1) {
    std::copy(row + first + shift, row + last + shift, dst + first);
    return;
  }
  for (int64_t q = first; q < last; ++q)
    dst[q] = row[q * stride + shift];
}

// row[q * stride + shift] += src[q], gather's adjoint. The image and the
// columns never overlap (restrict), so the stride-1 loop vectorizes without
// a runtime overlap check.
inline void scatter_add(float* __restrict row, const float* __restrict src, int64_t stride,
                        int64_t shift, int64_t first, int64_t last) {
  if (stride == 1) {
    for (int64_t q = first; q < last; ++q)
      row[q + shift] += src[q];
    return;
  }
  for (int64_t q = first; q < last; ++q)
    row[q * stride + shift] += src[q];
}

} // namespace

void im2col(const window& g, const float* image, float* col, int64_t row_stride) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  if (row_stride == 0)
    row_stride = oh * ow;
  int64_t row = 0;  // of col: (c, i, j)
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* plane = image + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j, ++row) {
        const int64_t shift_h = i * g.dilation_h - g.pad_h;
        const int64_t shift_w = j * g.dilation_w - g.pad_w;
        int64_t w0, w1;
        valid_range(shift_w, g.stride_w, g.in_w, ow, w0, w1);
        float* out = col + row * row_stride;
        for (int64_t r = 0; r < oh; ++r, out += ow) {
          const int64_t ih = r * g.stride_h + shift_h;
          if (ih < 0 || ih >= g.in_h) {
            std::fill(out, out + ow, 0.0f);
            continue;
          }
          std::fill(out, out + w0, 0.0f);
          gather(out, plane + ih * g.in_w, g.stride_w, shift_w, w0, w1);
          std::fill(out + w1, out + ow, 0.0f);
        }
      }
    }
  }
}

void col2im(const window& g, const float* col, float* image, int64_t row_stride) {
  const int64_t oh = g.out_h(), ow = g.out_w();
  if (row_stride == 0)
    row_stride = oh * ow;
  std::memset(image, 0, static_cast<size_t>(g.channels * g.in_h * g.in_w) * sizeof(float));
  int64_t row = 0;  // of col: (c, i, j)
  for (int64_t c = 0; c < g.channels; ++c) {
    float* plane = image + c * g.in_h * g.in_w;
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j, ++row) {
        const int64_t shift_h = i * g.dilation_h - g.pad_h;
        const int64_t shift_w = j * g.dilation_w - g.pad_w;
        int64_t w0, w1;
        valid_range(shift_w, g.stride_w, g.in_w, ow, w0, w1);
        const float* in = col + row * row_stride;
        for (int64_t r = 0; r < oh; ++r, in += ow) {
          const int64_t ih = r * g.stride_h + shift_h;
          if (ih >= 0 && ih < g.in_h)
            scatter_add(plane + ih * g.in_w, in, g.stride_w, shift_w, w0, w1);
        }
      }
    }
  }
}

namespace {

// Max pooling's comparison: a larger value wins, and the first NaN wins
// over any number (as in PyTorch), so that a NaN is not hidden.
// Bitwise operators rather than || and &&, which would branch.
inline bool beats(float v, float best) {
  return static_cast<bool>((v > best) | ((v != v) & (best == best)));
}

// Index offset `offset` when `v` beats `best` (no NaN involved), best
// updated: a mask instead of a branch, since which tap wins is data and a
// mispredicted branch per tap costs more than the arithmetic.
inline void take_larger(float v, int64_t offset, float& best, int64_t& where) {
  const int64_t mask = -static_cast<int64_t>(v > best);
  where = (where & ~mask) | (offset & mask);
  best = v > best ? v : best;
}

// The common 2x2, stride 2, unpadded, undilated pool, every window inside
// the image: no bounds checks, the four taps in the general loop's order.
// A window holding a NaN takes the general rule (first NaN wins).
void max_pool_2x2(const window& g, const float* image, float* out, int64_t* argmax) {
  const int64_t oh = g.out_h(), ow = g.out_w(), w = g.in_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const int64_t base = c * g.in_h * w;
    for (int64_t r = 0; r < oh; ++r) {
      const int64_t top = base + 2 * r * w;
      for (int64_t q = 0; q < ow; ++q) {
        const int64_t at = top + 2 * q;
        const float v[4] = {image[at], image[at + 1], image[at + w], image[at + w + 1]};
        const int64_t offsets[4] = {0, 1, w, w + 1};
        float best = v[0];
        int64_t where = 0;
        if (((v[0] != v[0]) | (v[1] != v[1]) | (v[2] != v[2]) | (v[3] != v[3])) != 0) {
          for (int k = 1; k < 4; ++k)
            if (beats(v[k], best)) {
              best = v[k];
              where = offsets[k];
            }
        } else {
          take_larger(v[1], 1, best, where);
          take_larger(v[2], w, best, where);
          take_larger(v[3], w + 1, best, where);
        }
        *out++ = best;
        *argmax++ = at + where;
      }
    }
  }
}

} // namespace

// The pools walk each output position's window directly: their kernels are
// small (2x2, 3x3) and there is no GEMM to feed.
void max_pool(const window& g, const float* image, float* out, int64_t* argmax) {
  if (g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 &&
      g.pad_h == 0 && g.pad_w == 0 && g.dilation_h == 1 && g.dilation_w == 1) {
    max_pool_2x2(g, image, out, argmax);
    return;
  }
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
            if (where < 0 || beats(image[at], best)) {
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
