#include "dtrain/nn/pooling.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/core/parallel.hpp"

namespace dtrain::nn {

pool2d::pool2d(kind k, image_shape input, const options& opts, std::string name)
  : kind_(k), input_(input), options_(opts), name_(std::move(name)) {
  window_.channels = input.channels;
  window_.in_h = input.height;
  window_.in_w = input.width;
  window_.kernel_h = opts.kernel_h;
  window_.kernel_w = opts.kernel_w;
  window_.stride_h = opts.stride_h == 0 ? opts.kernel_h : opts.stride_h;
  window_.stride_w = opts.stride_w == 0 ? opts.kernel_w : opts.stride_w;
  window_.pad_h = opts.pad_h;
  window_.pad_w = opts.pad_w;
}

std::string pool2d::describe() const {
  std::string out = name_ + "(" + input_.to_string();
  if (name_ == "global_avg_pool")
    return out + ")";
  auto pair = [](int64_t h, int64_t w) {
    return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w);
  };
  out += ", k" + pair(window_.kernel_h, window_.kernel_w);
  if (window_.stride_h != window_.kernel_h || window_.stride_w != window_.kernel_w)
    out += ", s" + pair(window_.stride_h, window_.stride_w);
  if (window_.pad_h != 0 || window_.pad_w != 0)
    out += ", p" + pair(window_.pad_h, window_.pad_w);
  return out + ")";
}

image_shape pool2d::output_shape() const {
  return {input_.channels, window_.out_h(), window_.out_w()};
}

result<int64_t> pool2d::output_features(int64_t input) const {
  constexpr int64_t limit = int64_t{1} << 20;
  auto in_range = [&](int64_t v, int64_t low) { return v >= low && v <= limit; };
  const auto& w = window_;
  if (!in_range(input_.channels, 1) || !in_range(input_.height, 1) || !in_range(input_.width, 1))
    return invalid_argument(describe() + ": channels and sizes must be in [1, 2^20]");
  if (!in_range(w.kernel_h, 1) || !in_range(w.kernel_w, 1) || !in_range(w.stride_h, 1) ||
      !in_range(w.stride_w, 1))
    return invalid_argument(describe() + ": kernel and stride must be >= 1");
  if (w.pad_h < 0 || w.pad_w < 0 || 2 * w.pad_h > w.kernel_h || 2 * w.pad_w > w.kernel_w)
    return invalid_argument(describe() + ": padding must be in [0, kernel / 2]");
  if (w.out_h() < 1 || w.out_w() < 1)
    return invalid_argument(describe() + ": the kernel does not fit in the padded " +
                            input_.to_string() + " input");
  auto count = checked_numel({input_.channels, input_.height, input_.width});
  if (!count)
    return count.error().with_context(describe());
  if (input != input_.features())
    return shape_mismatch(describe() + " expects " + std::to_string(input_.features()) +
                          " input features (" + input_.to_string() + ") but gets " +
                          std::to_string(input));
  return output_shape().features();
}

const tensor& pool2d::forward(const tensor& x, const forward_context&) {
  if (x.is_cuda())
    return forward_cuda(x);
  input_tensor_ = &x;
  const int64_t batch = x.size(0), in_features = input_.features();
  const int64_t out_features = output_shape().features();
  ensure(output_, {batch, out_features}, x.where());
  if (kind_ == kind::max)
    argmax_.resize(static_cast<size_t>(batch * out_features));  // no-op once stable
  parallel_for(batch, grain_for(in_features), [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) {
      const float* image = x.data() + n * in_features;
      float* out = output_.data() + n * out_features;
      if (kind_ == kind::max)
        conv_cpu::max_pool(window_, image, out, argmax_.data() + n * out_features);
      else
        conv_cpu::avg_pool(window_, image, out);
    }
  });
  return output_;
}

const tensor& pool2d::backward(const tensor& dy, const backward_context& ctx) {
  if (!ctx.need_input_grad) {
    input_grad_ = tensor();
    return input_grad_;
  }
  if (dy.is_cuda())
    return backward_cuda(dy);
  const int64_t batch = dy.size(0), in_features = input_.features();
  const int64_t out_features = output_shape().features();
  ensure(input_grad_, {batch, in_features}, dy.where());
  parallel_for(batch, grain_for(in_features), [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n) {
      const float* dy_n = dy.data() + n * out_features;
      float* dx = input_grad_.data() + n * in_features;
      if (kind_ == kind::max)
        conv_cpu::max_pool_backward(window_, dy_n, argmax_.data() + n * out_features, dx);
      else
        conv_cpu::avg_pool_backward(window_, dy_n, dx);
    }
  });
  return input_grad_;
}

namespace {

pool2d::options square(int64_t kernel, int64_t stride, int64_t padding) {
  pool2d::options o;
  o.kernel_h = o.kernel_w = kernel;
  o.stride_h = o.stride_w = stride;
  o.pad_h = o.pad_w = padding;
  return o;
}

} // namespace

std::unique_ptr<pool2d> max_pool2d(image_shape input, int64_t kernel, int64_t stride,
                                   int64_t padding) {
  return std::make_unique<pool2d>(pool2d::kind::max, input, square(kernel, stride, padding),
                                  "max_pool2d");
}

std::unique_ptr<pool2d> avg_pool2d(image_shape input, int64_t kernel, int64_t stride,
                                   int64_t padding) {
  return std::make_unique<pool2d>(pool2d::kind::average, input,
                                  square(kernel, stride, padding), "avg_pool2d");
}

std::unique_ptr<pool2d> global_avg_pool(image_shape input) {
  pool2d::options o;
  o.kernel_h = input.height;
  o.kernel_w = input.width;
  return std::make_unique<pool2d>(pool2d::kind::average, input, o, "global_avg_pool");
}

} // namespace dtrain::nn
