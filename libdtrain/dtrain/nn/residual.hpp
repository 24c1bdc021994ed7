#pragma once

#include <memory>

#include "dtrain/nn/layers.hpp"

namespace dtrain::nn {

/// y = x + inner(x): a residual (skip) connection around a sequential of
/// layers, which must give back as many features as it takes (otherwise
/// output_features is a shape_mismatch naming the block).
///
/// A container that a parent sequential does not flatten: it stays one
/// layer of the model, and its parameters and buffers are the inner
/// layers', named "inner.INDEX.NAME" (in a model "3.inner.0.weight"), laid
/// out contiguously in the model's flat buffers in inner layer order. The
/// model's gradient-ready hook reports the whole block's range once its
/// backward is done. Works on any device its inner layers work on.
class residual_block final : public module {
public:
  explicit residual_block(std::unique_ptr<sequential> inner) : inner_(std::move(inner)) {}

  const sequential& inner() const { return *inner_; }

  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  std::vector<parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  std::vector<buffer_spec> buffer_specs() const override;
  void bind_buffers(std::vector<tensor> buffers) override;
  const tensor& forward(const tensor& x, const forward_context& ctx) override;
  status last_status() const override;
  void set_statistics_reducer(const statistics_reducer& reduce) override;
  const tensor& backward(const tensor& dy, const backward_context& ctx) override;

private:
  std::unique_ptr<sequential> inner_;
  tensor output_, input_grad_;
};

} // namespace dtrain::nn
