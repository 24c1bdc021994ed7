// embedding's CUDA path: a gather forward, an atomic scatter-add backward.
#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/embedding.hpp"

namespace dtrain::nn {

const tensor& embedding::forward_cuda(const tensor& x) {
  const int64_t rows = x.size(0), k = x.size(1);
  // The indices are few (k per sample): checking them on the host gives the
  // CPU's error, naming the first bad one, at the cost of one small copy.
  error_ = status::ok();
  std::vector<float> indices = x.to_vector();
  for (int64_t i = 0; i < rows * k && error_.is_ok(); ++i)
    if (!valid_index(indices[static_cast<size_t>(i)]))
      error_ = index_error(indices[static_cast<size_t>(i)], i / k, i % k);
  // A bad index gives a zero row, as on the CPU.
  cuda::embedding_forward(x.data(), weight_.data(), output_.data(), rows * k, vocab_, dim_);
  return output_;
}

const tensor& embedding::backward_cuda(const tensor& dy) {
  cuda::embedding_backward(input_->data(), dy.data(), weight_grad_.data(), input_->numel(),
                           vocab_, dim_);
  return input_grad_;
}

} // namespace dtrain::nn
