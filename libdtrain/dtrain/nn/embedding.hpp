#pragma once

#include "dtrain/nn/module.hpp"

namespace dtrain::nn {

/// torch.nn.Embedding over k indices per sample. The input is x [batch, k]
/// holding the indices as float values (dtrain tensors are float32, and a
/// float represents every integer up to 2^24 exactly); the output is
/// [batch, k * dim], row b holding weight[x[b, 0]], weight[x[b, 1]], ...
/// one after the other. The parameter "weight" is [vocab, dim], initialized
/// normal(0, 1) as in PyTorch. backward() adds each output row's gradient
/// into the weight row it came from (a scatter-add: repeated indices sum);
/// the indices have no gradient, so dL/dx is zeros.
///
/// An index that is not an integer in [0, vocab) is an out_of_range error
/// (last_status()) naming it, its row and position; the output is zeros
/// then. On CPU and CUDA (a gather, and an atomic scatter-add whose sums
/// of repeated indices come in no fixed order; the indices are checked on
/// the host, one small copy per forward).
class embedding final : public module {
public:
  embedding(int64_t vocab, int64_t dim) : vocab_(vocab), dim_(dim) {}

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  status last_status() const override { return error_; }
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  // The CUDA path (embedding_cuda.cpp), taken when the input is on a device.
  const tensor& forward_cuda(const tensor& x);
  const tensor& backward_cuda(const tensor& dy);
  /// A whole number in [0, vocab).
  bool valid_index(float v) const;
  /// out_of_range naming the index, its row and position.
  status index_error(float v, int64_t row, int64_t position) const;

  int64_t vocab_, dim_;
  tensor weight_, weight_grad_;
  const tensor* input_ = nullptr;
  tensor output_, input_grad_;
  status error_;
};

} // namespace dtrain::nn
