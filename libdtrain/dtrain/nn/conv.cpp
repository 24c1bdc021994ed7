#include "dtrain/nn/conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/core/parallel.hpp"
#include "dtrain/tensor/kernels.hpp"

namespace dtrain::nn {

std::string image_shape::to_string() const {
  return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width);
}

conv2d_options conv2d_options::square(int64_t kernel, int64_t stride, int64_t padding,
                                      int64_t dilation, int64_t groups, bool bias) {
  conv2d_options o;
  o.kernel_h = o.kernel_w = kernel;
  o.stride_h = o.stride_w = stride;
  o.pad_h = o.pad_w = padding;
  o.dilation_h = o.dilation_w = dilation;
  o.groups = groups;
  o.bias = bias;
  return o;
}

conv2d::conv2d(image_shape input, int64_t out_channels, const conv2d_options& options)
  : input_(input), out_channels_(out_channels), options_(options) {
  window_.channels = input.channels;
  window_.in_h = input.height;
  window_.in_w = input.width;
  window_.kernel_h = options.kernel_h;
  window_.kernel_w = options.kernel_w;
  window_.stride_h = options.stride_h;
  window_.stride_w = options.stride_w;
  window_.pad_h = options.pad_h;
  window_.pad_w = options.pad_w;
  window_.dilation_h = options.dilation_h;
  window_.dilation_w = options.dilation_w;
  identity_columns_ = options.kernel_h == 1 && options.kernel_w == 1 && options.stride_h == 1 &&
                      options.stride_w == 1 && options.pad_h == 0 && options.pad_w == 0;
}

std::string conv2d::describe() const {
  const auto& o = options_;
  auto pair = [](int64_t h, int64_t w) {
    return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w);
  };
  std::string out = "conv2d(" + input_.to_string() + "->" + std::to_string(out_channels_) +
                    ", k" + pair(o.kernel_h, o.kernel_w);
  if (o.stride_h != 1 || o.stride_w != 1)
    out += ", s" + pair(o.stride_h, o.stride_w);
  if (o.pad_h != 0 || o.pad_w != 0)
    out += ", p" + pair(o.pad_h, o.pad_w);
  if (o.dilation_h != 1 || o.dilation_w != 1)
    out += ", d" + pair(o.dilation_h, o.dilation_w);
  if (o.groups != 1)
    out += ", g" + std::to_string(o.groups);
  if (!o.bias)
    out += ", no bias";
  return out + ")";
}

image_shape conv2d::output_shape() const {
  return {out_channels_, window_.out_h(), window_.out_w()};
}

status conv2d::check_options() const {
  const auto& o = options_;
  // Bounds that keep every product below (and index within) int64.
  constexpr int64_t limit = int64_t{1} << 20;
  auto in_range = [&](int64_t v, int64_t low) { return v >= low && v <= limit; };
  if (!in_range(input_.channels, 1) || !in_range(input_.height, 1) ||
      !in_range(input_.width, 1) || !in_range(out_channels_, 1))
    return invalid_argument(describe() + ": channels and sizes must be in [1, 2^20]");
  if (!in_range(o.kernel_h, 1) || !in_range(o.kernel_w, 1) || !in_range(o.stride_h, 1) ||
      !in_range(o.stride_w, 1) || !in_range(o.dilation_h, 1) || !in_range(o.dilation_w, 1))
    return invalid_argument(describe() + ": kernel, stride and dilation must be >= 1");
  if (!in_range(o.pad_h, 0) || !in_range(o.pad_w, 0))
    return invalid_argument(describe() + ": padding must be >= 0");
  if (!in_range(o.groups, 1) || input_.channels % o.groups != 0 ||
      out_channels_ % o.groups != 0)
    return invalid_argument(describe() + ": groups (" + std::to_string(o.groups) +
                            ") must divide both channel counts");
  if (window_.out_h() < 1 || window_.out_w() < 1)
    return invalid_argument(describe() + ": the dilated kernel does not fit in the padded " +
                            input_.to_string() + " input");
  // The weight, the columns of one sample and the output must be countable.
  for (const shape_t& shape :
       {shape_t{input_.channels, input_.height, input_.width, o.kernel_h, o.kernel_w,
                out_channels_},
        shape_t{input_.channels, o.kernel_h, o.kernel_w, window_.out_h(), window_.out_w(),
                out_channels_}}) {
    auto count = checked_numel(shape);
    if (!count)
      return count.error().with_context(describe());
  }
  return status::ok();
}

result<int64_t> conv2d::output_features(int64_t input) const {
  DTRAIN_RETURN_IF_ERROR(check_options());
  if (input != input_.features())
    return shape_mismatch(describe() + " expects " + std::to_string(input_.features()) +
                          " input features (" + input_.to_string() + ") but gets " +
                          std::to_string(input));
  return output_shape().features();
}

std::vector<parameter_spec> conv2d::parameter_specs() const {
  std::vector<parameter_spec> specs{
      {"weight",
       {out_channels_, input_.channels / options_.groups, options_.kernel_h, options_.kernel_w}}};
  if (options_.bias)
    specs.push_back({"bias", {out_channels_}});
  return specs;
}

void conv2d::initialize(std::vector<tensor>& params, rng& gen) const {
  const int64_t fan_in = input_.channels / options_.groups * options_.kernel_h * options_.kernel_w;
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  for (auto& p : params) {
    float* v = p.data();
    for (int64_t i = 0; i < p.numel(); ++i)
      v[i] = gen.uniform(-bound, bound);
  }
}

void conv2d::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  weight_ = params[0];
  weight_grad_ = grads[0];
  if (options_.bias) {
    bias_ = params[1];
    bias_grad_ = grads[1];
  }
}

namespace {

// to [rows, count * cols] from `count` blocks of [rows, cols] at `from`,
// `from_stride` apart: block s lands in columns [s * cols, (s + 1) * cols).
void interleave(const float* from, int64_t from_stride, int64_t count, int64_t rows,
                int64_t cols, float* to) {
  parallel_for(count, grain_for(rows * cols), [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s)
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(to + (r * count + s) * cols, from + s * from_stride + r * cols,
                    static_cast<size_t>(cols) * sizeof(float));
  });
}

// interleave's inverse: block s of `from` [rows, count * cols] back to
// to + s * to_stride as [rows, cols].
void deinterleave(const float* from, int64_t count, int64_t rows, int64_t cols, float* to,
                  int64_t to_stride) {
  parallel_for(count, grain_for(rows * cols), [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s)
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(to + s * to_stride + r * cols, from + (r * count + s) * cols,
                    static_cast<size_t>(cols) * sizeof(float));
  });
}

// The sum of row[0, n) in double: sixteen independent lanes, which
// vectorize where one running sum would not (its order is fixed).
double row_sum(const float* row, int64_t n) {
  constexpr int64_t lanes = 16;
  double partial[lanes] = {};
  int64_t p = 0;
  for (; p + lanes <= n; p += lanes)
    for (int64_t k = 0; k < lanes; ++k)
      partial[k] += row[p + k];
  double total = 0.0;
  for (; p < n; ++p)
    total += row[p];
  for (double v : partial)
    total += v;
  return total;
}

} // namespace

int64_t conv2d::chunk_size(int64_t batch) const {
  const int64_t per_sample = input_.channels * options_.kernel_h * options_.kernel_w *
                             window_.out_h() * window_.out_w();
  return std::max<int64_t>(1, std::min(column_budget / per_sample, batch));
}

void conv2d::fill_columns(const float* x, int64_t count, float* col) const {
  const int64_t positions = window_.out_h() * window_.out_w();
  if (identity_columns_) {
    interleave(x, input_.features(), count, input_.channels, positions, col);
    return;
  }
  const int64_t per_sample = input_.channels * options_.kernel_h * options_.kernel_w * positions;
  parallel_for(count, grain_for(per_sample), [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s)
      conv_cpu::im2col(window_, x + s * input_.features(), col + s * positions,
                       count * positions);
  });
}

// Forward, a chunk of `count` samples at a time: the chunk's columns side by
// side, [K, count * P] (K = in / groups * kh * kw per group, P output
// positions), one GEMM per group, Y' [out, count * P] = W [out, K] col,
// then Y' back into NCHW rows with the bias added. A chunk of one writes
// the GEMM's result in place.
const tensor& conv2d::forward(const tensor& x, const forward_context& ctx) {
  if (x.is_cuda())
    return forward_cuda(x, ctx.compute);
  input_tensor_ = &x;
  const int64_t batch = x.size(0), in_features = input_.features();
  const int64_t positions = window_.out_h() * window_.out_w();
  const int64_t group_out = out_channels_ / options_.groups;
  const int64_t group_k = input_.channels / options_.groups * options_.kernel_h * options_.kernel_w;
  const int64_t out_features = out_channels_ * positions;
  const int64_t chunk = chunk_size(batch);
  ensure(output_, {batch, out_features}, x.where());
  if (!(identity_columns_ && chunk == 1))  // else the input is read in place
    ensure(col_, {group_k * options_.groups, chunk * positions}, x.where());
  if (chunk > 1)
    ensure(product_, {out_channels_, chunk * positions}, x.where());
  const float* w = weight_.data();
  for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
    const int64_t count = std::min(chunk, batch - n0), width = count * positions;
    float* y = output_.data() + n0 * out_features;
    float* product = count == 1 ? y : product_.data();
    // A 1x1 conv's columns of one sample are its input, read in place.
    const float* col = x.data() + n0 * in_features;
    if (!(identity_columns_ && count == 1)) {
      fill_columns(col, count, col_.data());
      col = col_.data();
    }
    for (int64_t g = 0; g < options_.groups; ++g)
      cpu::gemm_ex(ctx.compute, false, false, group_out, width, group_k, 1.0f,
                   w + g * group_out * group_k, group_k, col + g * group_k * width, width, 0.0f,
                   product + g * group_out * width, width);
    if (count > 1)
      deinterleave(product, count, out_channels_, positions, y, out_features);
    if (options_.bias)
      parallel_for(count, grain_for(out_features), [&](int64_t first, int64_t last) {
        for (int64_t s = first; s < last; ++s)
          for (int64_t o = 0; o < out_channels_; ++o) {
            const float b = bias_.data()[o];
            float* row = y + s * out_features + o * positions;
            for (int64_t p = 0; p < positions; ++p)
              row[p] += b;
          }
      });
  }
  // The columns of a batch that fit in one chunk are still those of this
  // input when backward() runs (no other forward comes in between).
  columns_cover_batch_ = chunk == batch;
  return output_;
}

// Backward, chunk by chunk like the forward: dY' [out, count * P] gathered
// from the NCHW rows, dW_g += dY'_g col_g^T (one GEMM over the chunk), the
// bias gradient from dY''s rows, and for dL/dx dcol_g = W_g^T dY'_g, then
// col2im per sample.
const tensor& conv2d::backward(const tensor& dy, const backward_context& ctx) {
  if (dy.is_cuda())
    return backward_cuda(dy, ctx);
  const tensor& x = *input_tensor_;
  const int64_t batch = x.size(0), in_features = input_.features();
  const int64_t positions = window_.out_h() * window_.out_w();
  const int64_t group_out = out_channels_ / options_.groups;
  const int64_t group_k = input_.channels / options_.groups * options_.kernel_h * options_.kernel_w;
  const int64_t out_features = out_channels_ * positions;
  const int64_t chunk = chunk_size(batch);
  // Overwriting is zeroing, then adding every chunk.
  if (!ctx.accumulate) {
    cpu::fill(weight_grad_.data(), weight_grad_.numel(), 0.0f);
    if (options_.bias)
      cpu::fill(bias_grad_.data(), bias_grad_.numel(), 0.0f);
  }
  if (ctx.need_input_grad) {
    ensure(input_grad_, {batch, in_features}, x.where());
    if (!(identity_columns_ && chunk == 1))
      ensure(col_grad_, {group_k * options_.groups, chunk * positions}, x.where());
  } else {
    input_grad_ = tensor();
  }
  if (chunk > 1)
    ensure(product_, {out_channels_, chunk * positions}, x.where());
  const float* w = weight_.data();
  float* dw = weight_grad_.data();
  for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
    const int64_t count = std::min(chunk, batch - n0), width = count * positions;
    const float* dy_chunk = dy.data() + n0 * out_features;
    const bool in_place = identity_columns_ && count == 1;
    const float* col = in_place ? x.data() + n0 * in_features : col_.data();
    if (!in_place && !columns_cover_batch_)
      fill_columns(x.data() + n0 * in_features, count, col_.data());
    const float* dyt = dy_chunk;
    if (count > 1) {
      interleave(dy_chunk, out_features, count, out_channels_, positions, product_.data());
      dyt = product_.data();
    }
    for (int64_t g = 0; g < options_.groups; ++g)
      cpu::gemm_ex(ctx.compute, false, true, group_out, group_k, width, 1.0f,
                   dyt + g * group_out * width, width, col + g * group_k * width, width, 1.0f,
                   dw + g * group_out * group_k, group_k);
    if (options_.bias)
      parallel_for(out_channels_, grain_for(width), [&](int64_t first, int64_t last) {
        for (int64_t o = first; o < last; ++o)
          bias_grad_.data()[o] += static_cast<float>(row_sum(dyt + o * width, width));
      });
    if (!ctx.need_input_grad)
      continue;
    float* dx = input_grad_.data() + n0 * in_features;
    float* dcol = in_place ? dx : col_grad_.data();
    for (int64_t g = 0; g < options_.groups; ++g)
      cpu::gemm_ex(ctx.compute, true, false, group_k, width, group_out, 1.0f,
                   w + g * group_out * group_k, group_k, dyt + g * group_out * width, width, 0.0f,
                   dcol + g * group_k * width, width);
    if (in_place)
      continue;
    if (identity_columns_)
      deinterleave(col_grad_.data(), count, input_.channels, positions, dx, in_features);
    else
      parallel_for(count, grain_for(group_k * options_.groups * positions),
                   [&](int64_t first, int64_t last) {
                     for (int64_t s = first; s < last; ++s)
                       conv_cpu::col2im(window_, col_grad_.data() + s * positions,
                                        dx + s * in_features, width);
                   });
  }
  return input_grad_;
}

} // namespace dtrain::nn
