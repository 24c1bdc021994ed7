#include "dtrain/tensor/ops.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dtrain/build_config.hpp"

namespace dtrain::ops {

namespace {

[[noreturn]] void bad_call(const char* op, const std::string& what) {
  std::fprintf(stderr, "dtrain: ops::%s: %s\n", op, what.c_str());
  std::abort();
}

void require(bool ok, const char* op, const std::string& what) {
  if (!ok)
    bad_call(op, what);
}

void same_device(const char* op, const tensor& a, const tensor& b) {
  require(a.defined() && b.defined(), op, "undefined tensor");
  require(a.where() == b.where(), op,
          "tensors on " + a.where().to_string() + " and " + b.where().to_string());
}

void same_numel(const char* op, const tensor& a, const tensor& b) {
  same_device(op, a, b);
  require(a.numel() == b.numel(), op,
          "sizes differ: " + shape_string(a.shape()) + " vs " + shape_string(b.shape()));
}

// Runs the cpu:: or cuda:: version of a kernel, from the first tensor's device.
#if DTRAIN_HAS_CUDA
#define DTRAIN_DISPATCH(t, kernel, ...)                                        \
  ((t).is_cuda() ? ::dtrain::cuda::kernel(__VA_ARGS__)                         \
                 : ::dtrain::cpu::kernel(__VA_ARGS__))
#else
#define DTRAIN_DISPATCH(t, kernel, ...) ::dtrain::cpu::kernel(__VA_ARGS__)
#endif

// Elements per row: the product of every dimension after the first.
int64_t cols_of(const tensor& x) {
  int64_t cols = 1;
  for (int64_t axis = 1; axis < x.dim(); ++axis)
    cols *= x.size(axis);
  return cols;
}

double host_sum(const tensor& x) {
  if (!x.is_cuda()) {
    double s = 0;
    const float* p = x.data();
    for (int64_t i = 0; i < x.numel(); ++i)
      s += p[i];
    return s;
  }
  double s = 0;
  for (float v : x.to_vector())
    s += v;
  return s;
}

} // namespace

void matmul(const tensor& a, bool trans_a, const tensor& b, bool trans_b, tensor& c,
            float alpha, float beta, precision compute) {
  same_device("matmul", a, b);
  same_device("matmul", a, c);
  require(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "matmul", "operands must be 2-D");
  int64_t m = trans_a ? a.size(1) : a.size(0);
  int64_t k = trans_a ? a.size(0) : a.size(1);
  int64_t kb = trans_b ? b.size(1) : b.size(0);
  int64_t n = trans_b ? b.size(0) : b.size(1);
  require(k == kb && c.size(0) == m && c.size(1) == n, "matmul",
          "shapes do not chain: " + shape_string(a.shape()) + (trans_a ? "^T" : "") +
              " x " + shape_string(b.shape()) + (trans_b ? "^T" : "") + " -> " +
              shape_string(c.shape()));
  DTRAIN_DISPATCH(a, gemm_ex, compute, trans_a, trans_b, m, n, k, alpha, a.data(),
                  a.size(1), b.data(), b.size(1), beta, c.data(), n);
}

void add_bias(tensor& y, const tensor& bias) {
  same_device("add_bias", y, bias);
  require(bias.numel() == cols_of(y), "add_bias",
          "bias " + shape_string(bias.shape()) + " for " + shape_string(y.shape()));
  DTRAIN_DISPATCH(y, add_bias, y.data(), bias.data(), y.dim() == 0 ? 1 : y.size(0),
                  cols_of(y));
}

void bias_activation(tensor& y, const tensor& bias, activation kind) {
  require(kind == activation::relu || kind == activation::tanh, "bias_activation",
          "only ReLU and tanh (their backward needs only the output)");
  if (y.is_cuda()) {
    if (bias.defined())
      add_bias(y, bias);
    activation_forward(kind, y, y);
    return;
  }
  if (bias.defined()) {
    same_device("bias_activation", y, bias);
    require(bias.numel() == cols_of(y), "bias_activation",
            "bias " + shape_string(bias.shape()) + " for " + shape_string(y.shape()));
  }
  cpu::bias_activation(y.data(), bias.defined() ? bias.data() : nullptr,
                       y.dim() == 0 ? 1 : y.size(0), cols_of(y), kind == activation::relu);
}

void sum_rows(const tensor& x, tensor& out, float beta) {
  same_device("sum_rows", x, out);
  require(out.numel() == cols_of(x), "sum_rows",
          "out " + shape_string(out.shape()) + " for " + shape_string(x.shape()));
  DTRAIN_DISPATCH(x, sum_rows, x.data(), out.data(), x.dim() == 0 ? 1 : x.size(0),
                  cols_of(x), beta);
}

const char* to_string(activation kind) {
  switch (kind) {
    case activation::relu: return "relu";
    case activation::gelu: return "gelu";
    case activation::tanh: return "tanh";
  }
  return "unknown";
}

void activation_forward(activation kind, const tensor& x, tensor& y) {
  same_numel("activation_forward", x, y);
  switch (kind) {
    case activation::relu: DTRAIN_DISPATCH(x, relu_forward, x.data(), y.data(), x.numel()); break;
    case activation::gelu: DTRAIN_DISPATCH(x, gelu_forward, x.data(), y.data(), x.numel()); break;
    case activation::tanh: DTRAIN_DISPATCH(x, tanh_forward, x.data(), y.data(), x.numel()); break;
  }
}

void activation_backward(activation kind, const tensor& x, const tensor& y,
                         const tensor& dy, tensor& dx) {
  same_numel("activation_backward", dy, dx);
  switch (kind) {
    case activation::relu:
      same_numel("activation_backward", y, dy);
      DTRAIN_DISPATCH(y, relu_backward, y.data(), dy.data(), dx.data(), dx.numel());
      break;
    case activation::gelu:
      same_numel("activation_backward", x, dy);
      DTRAIN_DISPATCH(x, gelu_backward, x.data(), dy.data(), dx.data(), dx.numel());
      break;
    case activation::tanh:
      same_numel("activation_backward", y, dy);
      DTRAIN_DISPATCH(y, tanh_backward, y.data(), dy.data(), dx.data(), dx.numel());
      break;
  }
}

void dropout_forward(const tensor& x, tensor& y, tensor& mask, float p, uint64_t seed) {
  same_numel("dropout_forward", x, y);
  same_numel("dropout_forward", x, mask);
  require(p >= 0.0f && p < 1.0f, "dropout_forward", "p must be in [0, 1)");
  DTRAIN_DISPATCH(x, dropout_forward, x.data(), y.data(), mask.data(), x.numel(), p, seed);
}

void multiply(const tensor& a, const tensor& b, tensor& out) {
  same_numel("multiply", a, b);
  same_numel("multiply", a, out);
  DTRAIN_DISPATCH(a, multiply, a.data(), b.data(), out.data(), a.numel());
}

namespace {

void check_loss_args(const char* op, const tensor& pred, int64_t target_cols,
                     const tensor& target, const tensor* grad, const tensor& row_loss) {
  require(pred.dim() == 2, op, "predictions must be 2-D, got " + shape_string(pred.shape()));
  same_device(op, pred, target);
  same_device(op, pred, row_loss);
  require(target.numel() == pred.size(0) * target_cols, op,
          "targets " + shape_string(target.shape()) + " for predictions " +
              shape_string(pred.shape()));
  require(row_loss.numel() >= pred.size(0), op, "row_loss scratch too small");
  if (grad != nullptr && grad->defined())
    same_numel(op, pred, *grad);
}

} // namespace

float softmax_cross_entropy(const tensor& logits, const tensor& labels, tensor* grad,
                            tensor& row_loss, float grad_multiplier) {
  check_loss_args("softmax_cross_entropy", logits, 1, labels, grad, row_loss);
  int64_t rows = logits.size(0);
  if (rows == 0)
    return 0.0f;
  float* g = grad != nullptr && grad->defined() ? grad->data() : nullptr;
  DTRAIN_DISPATCH(logits, softmax_cross_entropy, logits.data(), labels.data(), g,
                  row_loss.data(), rows, logits.size(1),
                  grad_multiplier * (1.0f / static_cast<float>(rows)));
  return static_cast<float>(host_sum(row_loss.view(0, {rows})) / static_cast<double>(rows));
}

float mse(const tensor& pred, const tensor& target, tensor* grad, tensor& row_loss,
          float grad_multiplier) {
  check_loss_args("mse", pred, pred.size(1), target, grad, row_loss);
  int64_t rows = pred.size(0);
  if (pred.numel() == 0)
    return 0.0f;
  float* g = grad != nullptr && grad->defined() ? grad->data() : nullptr;
  float inv = grad_multiplier * (1.0f / static_cast<float>(pred.numel()));
  DTRAIN_DISPATCH(pred, squared_error, pred.data(), target.data(), g, row_loss.data(),
                  rows, pred.size(1), inv);
  return static_cast<float>(host_sum(row_loss.view(0, {rows})) /
                            static_cast<double>(pred.numel()));
}

int64_t count_correct(const tensor& logits, const tensor& labels, tensor& row_match) {
  check_loss_args("count_correct", logits, 1, labels, nullptr, row_match);
  int64_t rows = logits.size(0);
  if (rows == 0)
    return 0;
  DTRAIN_DISPATCH(logits, argmax_matches, logits.data(), labels.data(), row_match.data(),
                  rows, logits.size(1));
  return static_cast<int64_t>(host_sum(row_match.view(0, {rows})) + 0.5);
}

void fill(tensor& x, float value) {
  require(x.defined(), "fill", "undefined tensor");
  DTRAIN_DISPATCH(x, fill, x.data(), x.numel(), value);
}

void scale(tensor& x, float alpha) {
  require(x.defined(), "scale", "undefined tensor");
  DTRAIN_DISPATCH(x, scale, x.data(), x.numel(), alpha);
}

void axpy(float alpha, const tensor& x, tensor& y) {
  same_numel("axpy", x, y);
  DTRAIN_DISPATCH(x, axpy, alpha, x.data(), y.data(), x.numel());
}

double sum(const tensor& x) {
  require(x.defined(), "sum", "undefined tensor");
  return host_sum(x);
}

bool unscale_and_check_finite(tensor& x, float inv_scale, tensor& found) {
  same_device("unscale_and_check_finite", x, found);
  require(found.numel() == 1, "unscale_and_check_finite",
          "found " + shape_string(found.shape()) + " is not one element");
  fill(found, 0.0f);
  DTRAIN_DISPATCH(x, unscale_and_check_finite, x.data(), x.numel(), inv_scale, found.data());
  return found.to_vector()[0] == 0.0f;
}

void sgd_update(tensor& param, const tensor& grad, tensor* momentum_buf,
                const sgd_hyper& h) {
  same_numel("sgd_update", param, grad);
  float* buf = nullptr;
  if (h.momentum != 0.0f) {
    require(momentum_buf != nullptr, "sgd_update", "momentum needs a buffer");
    same_numel("sgd_update", param, *momentum_buf);
    buf = momentum_buf->data();
  }
  DTRAIN_DISPATCH(param, sgd_update, param.data(), grad.data(), buf, param.numel(), h);
}

void adam_update(tensor& param, const tensor& grad, tensor& m, tensor& v,
                 const adam_hyper& h) {
  same_numel("adam_update", param, grad);
  same_numel("adam_update", param, m);
  same_numel("adam_update", param, v);
  DTRAIN_DISPATCH(param, adam_update, param.data(), grad.data(), m.data(), v.data(),
                  param.numel(), h);
}

} // namespace dtrain::ops
