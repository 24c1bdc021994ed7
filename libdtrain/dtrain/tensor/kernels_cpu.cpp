// The CPU kernels: OpenBLAS for GEMM, plain loops (auto-vectorized at -O3)
// for the rest. Contracts are in kernel_decls.inc.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dtrain/core/parallel.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::cpu {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
          float* c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(std::max<int64_t>(lda, 1)), b,
              static_cast<blasint>(std::max<int64_t>(ldb, 1)), beta, c,
              static_cast<blasint>(std::max<int64_t>(ldc, 1)));
}

namespace {

// The rows x cols matrix at x (row stride ld) rounded to `p`, packed densely.
std::vector<float> rounded_copy(precision p, const float* x, int64_t rows, int64_t cols,
                                int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[static_cast<size_t>(i * cols + j)] = round_to(p, x[i * ld + j]);
  return out;
}

} // namespace

void gemm_ex(precision p, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
             float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float beta, float* c, int64_t ldc) {
  if (p == precision::fp32 || m == 0 || n == 0 || k == 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // A is stored m x k (k x m when transposed), B k x n (n x k); the copies
  // keep that layout with dense rows. Allocated per call: this is the
  // reference, not a fast path.
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  std::vector<float> ra = rounded_copy(p, a, a_rows, a_cols, lda);
  std::vector<float> rb = rounded_copy(p, b, b_rows, b_cols, ldb);
  gemm(trans_a, trans_b, m, n, k, alpha, ra.data(), a_cols, rb.data(), b_cols, beta, c, ldc);
}

void add_bias(float* y, const float* bias, int64_t rows, int64_t cols) {
  parallel_for(rows, grain_for(cols), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* row = y + i * cols;
      for (int64_t j = 0; j < cols; ++j)
        row[j] += bias[j];
    }
  });
}

void bias_activation(float* y, const float* bias, int64_t rows, int64_t cols, bool relu) {
  parallel_for(rows, grain_for(cols), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* row = y + i * cols;
      if (relu) {
        for (int64_t j = 0; j < cols; ++j) {
          const float v = row[j] + (bias != nullptr ? bias[j] : 0.0f);
          row[j] = v > 0.0f ? v : 0.0f;
        }
      } else {
        for (int64_t j = 0; j < cols; ++j)
          row[j] = std::tanh(row[j] + (bias != nullptr ? bias[j] : 0.0f));
      }
    }
  });
}

void sum_rows(const float* x, float* out, int64_t rows, int64_t cols, float beta) {
  if (beta == 0.0f)
    std::memset(out, 0, static_cast<size_t>(cols) * sizeof(float));
  else if (beta != 1.0f)
    scale(out, cols, beta);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * cols;
    for (int64_t j = 0; j < cols; ++j)
      out[j] += row[j];
  }
}

// The activations run element-wise in parallel_for over ranges of at least
// 64 Ki elements (one thread for anything smaller).
namespace {

template <typename Body>
void elementwise(int64_t n, Body body) {
  parallel_for(n, grain_for(1), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      body(i);
  });
}

constexpr float inv_sqrt2 = 0.70710678118654752f;
constexpr float inv_sqrt_2pi = 0.39894228040143268f;

} // namespace

void relu_forward(const float* x, float* y, int64_t n) {
  elementwise(n, [=](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n) {
  // Both loads unconditional, so that the select vectorizes instead of
  // branching on every element's sign.
  elementwise(n, [=](int64_t i) {
    const float g = dy[i];
    dx[i] = y[i] > 0.0f ? g : 0.0f;
  });
}

void gelu_forward(const float* x, float* y, int64_t n) {
  elementwise(n, [=](int64_t i) { y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2)); });
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  elementwise(n, [=](int64_t i) {
    float cdf = 0.5f * (1.0f + std::erf(x[i] * inv_sqrt2));
    float pdf = inv_sqrt_2pi * std::exp(-0.5f * x[i] * x[i]);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  });
}

void tanh_forward(const float* x, float* y, int64_t n) {
  elementwise(n, [=](int64_t i) { y[i] = std::tanh(x[i]); });
}

void tanh_backward(const float* y, const float* dy, float* dx, int64_t n) {
  elementwise(n, [=](int64_t i) { dx[i] = dy[i] * (1.0f - y[i] * y[i]); });
}

void dropout_forward(const float* x, float* y, float* mask, int64_t n, float p,
                     uint64_t seed) {
  float keep_scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = uniform01(seed, static_cast<uint64_t>(i)) >= p ? keep_scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

void multiply(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = a[i] * b[i];
}

void softmax_cross_entropy(const float* logits, const float* labels, float* grad,
                           float* row_loss, int64_t rows, int64_t cols,
                           float grad_scale) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * cols;
    float label_f = labels[i];
    auto label = static_cast<int64_t>(label_f);
    bool valid = label_f >= 0.0f && label < cols && static_cast<float>(label) == label_f;
    float zmax = z[0];
    for (int64_t j = 1; j < cols; ++j)
      zmax = std::max(zmax, z[j]);
    double total = 0;
    for (int64_t j = 0; j < cols; ++j)
      total += std::exp(static_cast<double>(z[j] - zmax));
    float log_total = static_cast<float>(std::log(total));
    row_loss[i] = valid ? log_total + zmax - z[label] : nan;
    if (grad == nullptr)
      continue;
    float* g = grad + i * cols;
    for (int64_t j = 0; j < cols; ++j) {
      float p = std::exp(z[j] - zmax - log_total);
      g[j] = valid ? grad_scale * (p - (j == label ? 1.0f : 0.0f)) : nan;
    }
  }
}

void squared_error(const float* pred, const float* target, float* grad,
                   float* row_loss, int64_t rows, int64_t cols, float grad_scale) {
  for (int64_t i = 0; i < rows; ++i) {
    float total = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      float d = pred[i * cols + j] - target[i * cols + j];
      total += d * d;
      if (grad != nullptr)
        grad[i * cols + j] = grad_scale * 2.0f * d;
    }
    row_loss[i] = total;
  }
}

void argmax_matches(const float* logits, const float* labels, float* row_match,
                    int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * cols;
    int64_t best = 0;
    for (int64_t j = 1; j < cols; ++j)
      if (z[j] > z[best])
        best = j;
    row_match[i] = static_cast<float>(best) == labels[i] ? 1.0f : 0.0f;
  }
}

void fill(float* x, int64_t n, float value) { std::fill(x, x + n, value); }

void scale(float* x, int64_t n, float alpha) {
  for (int64_t i = 0; i < n; ++i)
    x[i] *= alpha;
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += alpha * x[i];
}

// The optimizers' updates are element-wise: ranges of them in parallel_for,
// each range a plain loop the compiler vectorizes.
void sgd_update(float* param, const float* grad, float* momentum_buf, int64_t n,
                const sgd_hyper& h) {
  parallel_for(n, grain_for(3), [&](int64_t first, int64_t last) {
    if (h.momentum == 0.0f) {
      for (int64_t i = first; i < last; ++i)
        param[i] -= h.lr * (grad[i] + h.weight_decay * param[i]);
      return;
    }
    for (int64_t i = first; i < last; ++i) {
      float g = grad[i] + h.weight_decay * param[i];
      float buf = h.first_step ? g : h.momentum * momentum_buf[i] + (1.0f - h.dampening) * g;
      momentum_buf[i] = buf;
      param[i] -= h.lr * (h.nesterov ? g + h.momentum * buf : buf);
    }
  });
}

void adam_update(float* param, const float* grad, float* m, float* v, int64_t n,
                 const adam_hyper& h) {
  const float step_size = h.lr / h.bias_correction1;
  const float inv_sqrt_bc2 = 1.0f / std::sqrt(h.bias_correction2);
  const float decay = h.decoupled ? 1.0f - h.lr * h.weight_decay : 1.0f;
  const float coupled_wd = h.decoupled ? 0.0f : h.weight_decay;
  parallel_for(n, grain_for(4), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float g = grad[i] + coupled_wd * param[i];
      m[i] = h.beta1 * m[i] + (1.0f - h.beta1) * g;
      v[i] = h.beta2 * v[i] + (1.0f - h.beta2) * g * g;
      float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + h.eps;
      param[i] = param[i] * decay - step_size * m[i] / denom;
    }
  });
}

void unscale_and_check_finite(float* x, int64_t n, float inv_scale, float* found_inf) {
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) {
    bad |= !std::isfinite(x[i]);
    x[i] *= inv_scale;
  }
  if (bad)
    *found_inf = 1.0f;
}

} // namespace dtrain::cpu
