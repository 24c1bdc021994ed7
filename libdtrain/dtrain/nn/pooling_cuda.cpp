// pool2d's CUDA path: one kernel over the whole batch each way.
#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/cuda_window.hpp"
#include "dtrain/nn/pooling.hpp"

namespace dtrain::nn {

const tensor& pool2d::forward_cuda(const tensor& x) {
  input_tensor_ = &x;
  const int64_t batch = x.size(0), out_features = output_shape().features();
  ensure(output_, {batch, out_features}, x.where());
  const cuda::window2d g = batch_window(window_, batch);
  if (kind_ == kind::max) {
    auto count = static_cast<size_t>(batch * out_features);
    int64_t* argmax = device_argmax_.get_as<int64_t>(count, x.where().index);
    cuda::max_pool(g, x.data(), output_.data(), argmax);
  } else {
    cuda::avg_pool(g, x.data(), output_.data());
  }
  return output_;
}

const tensor& pool2d::backward_cuda(const tensor& dy) {
  const int64_t batch = dy.size(0);
  ensure(input_grad_, {batch, input_.features()}, dy.where());
  const cuda::window2d g = batch_window(window_, batch);
  if (kind_ == kind::max) {
    auto count = static_cast<size_t>(dy.numel());
    // The same buffer forward filled: get() hands it back as it is.
    const int64_t* argmax = device_argmax_.get_as<int64_t>(count, dy.where().index);
    cuda::max_pool_backward(g, dy.data(), argmax, input_grad_.data());
  } else {
    cuda::avg_pool_backward(g, dy.data(), input_grad_.data());
  }
  return input_grad_;
}

} // namespace dtrain::nn
