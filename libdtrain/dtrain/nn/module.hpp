#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/tensor/precision.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::nn {

/// A parameter a module asks for. The model owning the module allocates
/// every parameter in one flat buffer and hands the module views of it.
struct parameter_spec {
  std::string name;   // "weight", "bias"
  shape_t shape;
};

/// Model state a module asks for that is not a parameter: BatchNorm's
/// running statistics. The model keeps every buffer in one more flat
/// buffer, model::buffers(): not part of the gradient sync, never stepped by
/// an optimizer, but saved and restored with the model (model.hpp says how
/// replicas keep theirs identical). `initial` is every element's value
/// when the model is created (running_var starts at 1).
struct buffer_spec {
  std::string name;   // "running_mean"
  shape_t shape;
  float initial = 0.0f;
};

/// Sums `values` (a host tensor) element-wise across the replicas of a
/// group, in place, blocking until every replica has contributed: how a
/// synchronized BatchNorm shares its statistics. Every replica must call it
/// the same number of times with the same sizes.
using statistics_reducer = std::function<status(tensor& values)>;

/// What a forward pass needs to know besides its input.
struct forward_context {
  bool training = true;
  /// Fresh for every forward pass, for stochastic layers (dropout); the
  /// model derives it from its seed and a pass counter.
  uint64_t seed = 0;
  /// What the layer's GEMMs compute in (precision.hpp); storage stays
  /// float32. Passed explicitly, not kept per thread: actors migrate
  /// between threads.
  precision compute = precision::fp32;
};

/// What a backward pass is asked to produce.
struct backward_context {
  /// Compute dL/dx (the first layer of a model skips it).
  bool need_input_grad = true;
  /// Add the parameter gradients into the bound buffers (true) or overwrite
  /// them (false: the first micro-batch after an optimizer step, which
  /// saves zeroing the buffer and reading it back).
  bool accumulate = true;
  /// As forward_context::compute, for the backward GEMMs.
  precision compute = precision::fp32;
};

/// A layer of a feed-forward network over [batch, features] inputs.
///
/// Lifecycle: the owning model asks for output_features() (shape checking,
/// before anything is allocated), parameter_specs() and buffer_specs(); it
/// initializes the parameters through initialize() on host views, then binds
/// device views of the flat parameter and gradient buffers with bind(), and
/// of the flat model-state buffer with bind_buffers(). forward() keeps what
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

  virtual std::vector<buffer_spec> buffer_specs() const { return {}; }
  /// Views of the model's flat buffer of model state, shaped as
  /// buffer_specs() and already holding their values (initial or restored).
  virtual void bind_buffers(std::vector<tensor> buffers) {}

  virtual const tensor& forward(const tensor& x, const forward_context& ctx) = 0;
  /// Why the last forward() or backward() could not compute, or ok: a
  /// layer with no kernel on the input's device (unavailable), an index out
  /// of range (out_of_range), batch statistics of a single value, a failed
  /// cross-replica reduction. forward() and backward() return references
  /// and cannot fail, so a layer that meets such input still returns a
  /// result of the right shape (zeros) and reports here; model::forward and
  /// model::backward turn it into their error. Reset by every forward().
  virtual status last_status() const { return status::ok(); }
  /// Makes the layer's batch statistics those of the whole group (as
  /// torch.nn.SyncBatchNorm), reduced through `reduce`; an empty function
  /// returns to per-replica statistics. Containers pass it to their layers;
  /// layers without batch statistics ignore it.
  virtual void set_statistics_reducer(const statistics_reducer& reduce) {}
  /// Returns dL/dx, or an undefined tensor when ctx.need_input_grad is
  /// false (the first layer skips that GEMM).
  virtual const tensor& backward(const tensor& dy, const backward_context& ctx) = 0;
};

/// Makes `t` a tensor of `shape` on `where`, reusing its memory when it
/// already has exactly that shape and device.
void ensure(tensor& t, const shape_t& shape, device where);

} // namespace dtrain::nn
