#pragma once

// The libtorch adapter's model: a torch::nn::Module whose parameters,
// gradients and float buffers live in a dtrain model's flat buffers.
// CAF-free; built only where libtorch is found (libtorch/CMakeLists.txt).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "dtrain/core/status.hpp"
#include "dtrain/nn/model.hpp"

namespace dtrain::libtorch {

/// An exception from libtorch as an error: internal, "where: message",
/// without the C++ backtrace that c10::Error's what() carries.
status torch_error(const std::string& where, const std::exception& e);

/// `t` as a libtorch tensor: the same memory (no copy), float32, on the
/// same device, with t's shape. The result keeps t's storage alive.
at::Tensor as_torch(const tensor& t);
/// Sets libtorch's intra-op threads to the replica's share of the host
/// (dtrain::blas_threads()), as dtrain's own kernels use. With OpenMP
/// (Debian's libtorch) the setting is the calling thread's and an actor may
/// move between threads: every forward asks (a thread-local read).
void follow_replica_threads();
/// libtorch's device for a dtrain device; unavailable when this libtorch
/// has no CUDA and `where` is a GPU.
result<c10::Device> torch_device(device where);

/// How make_model() wraps a module.
struct module_options {
  /// One sample as the module's forward takes it ({1, 28, 28} for an
  /// image). Batches come from dtrain's loaders as [batch, features] and
  /// are viewed (no copy) as [batch, input_shape...]; the product of
  /// input_shape is the model's input_features.
  std::vector<int64_t> input_shape;
  device where = device::cpu();
};

/// The single layer of a model made by make_model(): the module, bound to
/// the model's buffers.
///
/// Binding (DDP's gradient_as_bucket_view, for every parameter): each
/// trainable parameter's data becomes a view of the model's parameters()
/// at its slot (set_data: the parameter keeps its identity, so optimizers
/// and references the user holds stay valid), its .grad a view of
/// gradients(), and each float32 buffer (BatchNorm's running statistics) a
/// view of buffers(). Autograd then accumulates gradients in place where
/// the gradient sync reduces them, and optimizers update the flat buffers.
/// Buffers of other types (BatchNorm's num_batches_tracked) and frozen
/// parameters stay the module's; extra_state() carries the former.
///
/// Readiness: a post hook on each parameter's gradient accumulator marks
/// the parameter final when autograd has written it; whenever the final
/// parameters grow into a longer suffix of the flat buffer (the module's
/// last parameters come first in backward), the suffix is reported through
/// the model's gradient-ready hook, so buckets are all-reduced while
/// autograd still computes the earlier layers. begin_backward() resets the
/// marks (forward() calls it). A parameter that gets no gradient keeps
/// the buckets at and before it for the sync's finish().
///
/// Not thread-safe, like nn::model. Exceptions from libtorch in forward()
/// and backward() become last_status() (internal, with libtorch's message).
class module_layer final : public nn::module {
public:
  module_layer(torch::nn::AnyModule module, module_options options, int64_t outputs);
  ~module_layer() override;

  torch::nn::Module& torch_module() { return *module_.ptr(); }
  const torch::nn::AnyModule& any_module() const { return module_; }
  const module_options& options() const { return options_; }
  /// The trainable parameters, in the flat buffer's order, with their
  /// names (torch's, "conv1.weight") and offsets into it.
  const std::vector<at::Tensor>& parameters() const { return params_; }
  const std::vector<std::string>& parameter_names() const { return names_; }
  const std::vector<int64_t>& offsets() const { return offsets_; }

  /// The module's forward on `x` ([batch, input_shape...], on the model's
  /// device) in training or evaluation mode; in evaluation mode without
  /// recording a graph; with follow_replica_threads(). Throws what libtorch
  /// throws.
  at::Tensor forward_torch(const at::Tensor& x, bool training);
  /// Clears the readiness marks: before a backward the framework did not
  /// start through forward() (a step that runs the module itself).
  void begin_backward();
  /// Reports a range of the flat gradient buffer as final (set by make_model
  /// to the model's report_gradients_ready()).
  void set_ready_reporter(std::function<void(int64_t, int64_t)> report) {
    report_ = std::move(report);
  }

  /// ok while every parameter's data and .grad are still the model's
  /// views; otherwise invalid_argument naming the parameter and the likely
  /// cause (a .grad replaced instead of accumulated into: create_graph,
  /// zero_grad(set_to_none); data re-pointed: module->to(), torch::load).
  /// Checked after every backward: a replaced view would silently leave
  /// the replica training on its own gradients.
  status check_bound() const;
  /// The non-float buffers (pickled by libtorch), and their restore.
  std::vector<char> extra_state() const;
  status load_extra_state(const std::vector<char>& state);

  // nn::module
  std::string describe() const override;
  result<int64_t> output_features(int64_t input) const override;
  status check_device(device where) const override;
  std::vector<nn::parameter_spec> parameter_specs() const override;
  void initialize(std::vector<tensor>& params, rng& gen) const override;
  void bind(std::vector<tensor> params, std::vector<tensor> grads) override;
  std::vector<nn::buffer_spec> buffer_specs() const override;
  void bind_buffers(std::vector<tensor> buffers) override;
  const tensor& forward(const tensor& x, const nn::forward_context& ctx) override;
  status last_status() const override { return last_status_; }
  const tensor& backward(const tensor& dy, const nn::backward_context& ctx) override;

private:
  void on_ready(size_t index);
  void install_hooks();
  void remove_hooks();

  torch::nn::AnyModule module_;
  module_options options_;
  int64_t outputs_ = 0;
  std::vector<at::Tensor> params_;
  std::vector<std::string> names_;
  std::vector<int64_t> offsets_;  // of each parameter in the flat buffer
  int64_t total_ = 0;
  std::vector<at::Tensor> float_buffers_, other_buffers_;
  std::vector<std::string> float_buffer_names_;
  std::vector<tensor> param_views_, grads_;  // dtrain's views of each parameter

  // Readiness: ready_[i] once autograd wrote parameter i in this backward;
  // every parameter from lowest_ on is ready.
  std::vector<char> ready_;
  size_t lowest_ = 0;
  std::function<void(int64_t, int64_t)> report_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hook_keys_;

  at::Tensor out_;      // the last training forward's output, with its graph
  tensor output_;       // out_ (or zeros after a failure) seen by dtrain
  tensor no_input_grad_;
  status last_status_;
};

/// A dtrain model over `module`, whose forward takes one tensor and returns
/// [batch, outputs] (any shape whose first dimension is the batch: it is
/// flattened to [batch, rest]). The module's current values become the
/// model's initial parameters (seed torch, torch::manual_seed, before
/// constructing it, the same on every replica). Errors: an empty
/// input_shape or module, a dry forward on zeros (evaluation mode, no
/// graph) that throws (libtorch's message), a module on another device
/// than options.where, no trainable parameters.
result<std::unique_ptr<nn::model>> make_model(torch::nn::AnyModule module,
                                              const module_options& options);

/// The adapter layer of a model made by make_model(), or null.
module_layer* layer_of(nn::model& m);

} // namespace dtrain::libtorch
