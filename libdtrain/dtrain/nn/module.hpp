#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::nn {

/// A parameter a module asks for. The model owning the module allocates
/// every parameter in one flat buffer and hands the module views of it.
struct parameter_spec {
  std::string name;   // "weight", "bias"
  shape_t shape;
};

/// What a forward pass needs to know besides its input.
struct forward_context {
  bool training = true;
  /// Fresh for every forward pass, for stochastic layers (dropout); the
  /// model derives it from its seed and a pass counter.
  uint64_t seed = 0;
};

/// What a backward pass is asked to produce.
struct backward_context {
  /// Compute dL/dx (the first layer of a model skips it).
  bool need_input_grad = true;
  /// Add the parameter gradients into the bound buffers (true) or overwrite
  /// them (false: the first micro-batch after an optimizer step, which
  /// saves zeroing the buffer and reading it back).
  bool accumulate = true;
};

/// A layer of a feed-forward network over [batch, features] inputs.
///
/// Lifecycle: the owning model asks for output_features() (shape checking,
/// before anything is allocated) and parameter_specs(); it initializes the
/// parameters through initialize() on host views, then binds device views of
/// the flat parameter and gradient buffers with bind(). forward() keeps what
/// backward() needs (its input and output); backward() must follow the
/// forward whose activations it uses, with no other forward in between.
///
/// Buffers: a module owns its output and input-gradient tensors and reuses
/// them while the batch size stays the same; a returned reference stays
/// valid until the module's next forward/backward. backward() adds the
/// parameter gradients into the bound gradient views, or overwrites them,
/// as its backward_context says. Not thread-safe.
class module {
public:
  virtual ~module() = default;

  /// "linear(784->256)", "relu", "dropout(0.2)".
  virtual std::string describe() const = 0;
  /// Output feature count for `input` features, or shape_mismatch naming
  /// this layer when it cannot take that many.
  virtual result<int64_t> output_features(int64_t input) const = 0;

  /// ok when this layer has kernels for `where`; otherwise unavailable,
  /// naming the layer and the device. model::create asks before it
  /// allocates, so a layer without a CUDA kernel fails there with this
  /// error instead of crashing in its first forward.
  virtual status check_device(device where) const { return status::ok(); }

  virtual std::vector<parameter_spec> parameter_specs() const { return {}; }
  /// Deterministic initial values into host views shaped as parameter_specs().
  virtual void initialize(std::vector<tensor>& params, rng& gen) const {}
  /// Device views of the flat parameter and gradient buffers, shaped as
  /// parameter_specs().
  virtual void bind(std::vector<tensor> params, std::vector<tensor> grads) {}

  virtual const tensor& forward(const tensor& x, const forward_context& ctx) = 0;
  /// Returns dL/dx, or an undefined tensor when ctx.need_input_grad is
  /// false (the first layer skips that GEMM).
  virtual const tensor& backward(const tensor& dy, const backward_context& ctx) = 0;
};

/// Makes `t` a tensor of `shape` on `where`, reusing its memory when it
/// already has exactly that shape and device.
void ensure(tensor& t, const shape_t& shape, device where);

} // namespace dtrain::nn
