#pragma once

#include "dtrain/nn/module.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

/// y = x W + b, with W stored [in, out] (the transpose of torch.nn.Linear's
/// [out, in]: the forward GEMM then needs no transpose) and b [out].
/// Initialized as torch.nn.Linear: W and b uniform in +-1/sqrt(in).
class linear final : public module {
public:
  linear(int64_t in_features, int64_t out_features, bool bias = true);

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  /// Applies ReLU or tanh to its output in the bias pass, and takes the
  /// gradient back through it (sequential::fuse_epilogues).
  void fuse_activation(ops::activation kind) {
    fused_ = true;
    fused_kind_ = kind;
  }

private:
  int64_t in_;
  int64_t out_;
  bool has_bias_;
  bool fused_ = false;
  ops::activation fused_kind_ = ops::activation::relu;
  tensor activation_grad_;
  tensor weight_, bias_, weight_grad_, bias_grad_;
  const tensor* input_ = nullptr;
  tensor output_, input_grad_;
};

} // namespace dtrain::nn
