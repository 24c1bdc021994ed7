#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dtrain/nn/module.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

/// An elementwise activation (ReLU, GELU, tanh) with no parameters.
class activation_layer final : public module {
public:
  explicit activation_layer(ops::activation kind) : kind_(kind) {}

  std::string describe() const override { return ops::to_string(kind_); }
  result<int64_t> output_features(int64_t input) const override { return input; }
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

  ops::activation kind() const { return kind_; }
  /// The linear layer before it applies the activation in its own epilogue
  /// (sequential::fuse_epilogues): forward and backward pass through.
  void fuse_into_previous() { fused_ = true; }
  bool fused() const { return fused_; }

private:
  ops::activation kind_;
  bool fused_ = false;
  const tensor* input_ = nullptr;
  tensor output_, input_grad_;
};

/// Inverted dropout: in training, zeroes each value with probability p and
/// scales the rest by 1/(1-p); in evaluation, the identity.
class dropout final : public module {
public:
  explicit dropout(float p) : p_(p) {}

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  float p_;
  bool active_ = false;
  const tensor* input_ = nullptr;
  tensor output_, mask_, input_grad_;
};

/// Layers applied in order. A nested sequential is flattened into its
/// parent when added, so a model always sees a flat list of layers.
class sequential final : public module {
public:
  sequential() = default;
  explicit sequential(std::vector<std::unique_ptr<module>> layers);

  void add(std::unique_ptr<module> layer);
  /// Each linear layer followed by a ReLU or tanh applies it in its own
  /// epilogue, with the bias, in one pass over its output (the activation
  /// layer then passes through); GELU, whose backward needs its input, is
  /// left as it is. The model calls it once, before training.
  void fuse_epilogues();
  size_t layer_count() const { return layers_.size(); }
  module& layer(size_t i) { return *layers_[i]; }
  const module& layer(size_t i) const { return *layers_[i]; }

  std::string describe() const override;
  /// Checks that the layers chain; the error names the layer (1-based) that
  /// does not fit and the one before it.
  result<int64_t> output_features(int64_t input) const override;
  /// The first layer's error, with its 1-based index.
  status check_device(device where) const override;
  /// The layers' parameters in layer order, named "INDEX.NAME".
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  /// The layers' model-state buffers in layer order, named "INDEX.NAME".
  std::vector<buffer_spec> buffer_specs() const override;
  void bind_buffers(std::vector<tensor> buffers) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  /// The first layer's failure, naming the layer (1-based).
  status last_status() const override;
  void set_statistics_reducer(const statistics_reducer& reduce) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  std::vector<std::unique_ptr<module>> layers_;
  tensor empty_;
};

/// "relu", "gelu" or "tanh"; anything else is an invalid_argument that
/// names the value and the choices.
result<ops::activation> parse_activation(const std::string& name);

/// A multi-layer perceptron: linear layers inputs -> hidden... -> outputs,
/// each hidden one followed by the activation and, when dropout > 0, a
/// dropout layer.
struct mlp_spec {
  int64_t inputs = 784;
  std::vector<int64_t> hidden{256, 128, 100};
  int64_t outputs = 10;
  ops::activation act = ops::activation::relu;
  float dropout = 0.0f;
};
std::unique_ptr<sequential> make_mlp(const mlp_spec& spec);

} // namespace dtrain::nn
