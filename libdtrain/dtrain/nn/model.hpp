#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::nn {

struct model_options {
  int64_t input_features = 0;
  device where = device::cpu();
  /// Fixes the initial parameters and the dropout masks.
  uint64_t seed = 0;
  /// What the layers' GEMMs compute in (tensor/precision.hpp); parameters,
  /// gradients and activations stay float32 whatever it is.
  precision compute = precision::fp32;
};

/// Where one parameter lives in the model's flat buffers.
struct parameter_slot {
  std::string name;    // "3.weight": layer index (0-based) and parameter;
                       // "3.inner.0.weight" inside a residual block
  shape_t shape;
  int64_t offset = 0;  // in elements, into parameters() and gradients()
  int64_t count = 0;
};

/// What makes a layer's parameters present while it computes (ZeRO stage
/// 3, zero/parameter_shards.hpp: each rank keeps its own part of
/// parameters() and the others' parts are gathered for a layer and let go
/// after it). model::forward and model::backward call acquire(i) before
/// layer i computes (forward: first layer to last; backward: last to
/// first) and release(i) after it (in backward, after the gradient-ready
/// hook). Between the two calls, layer_range(i) of parameters() must hold
/// the model's values; elsewhere it may hold anything.
class parameter_window {
public:
  virtual ~parameter_window() = default;
  /// An error (a failed all-gather) ends the pass with it.
  virtual status acquire(size_t layer, bool backward) = 0;
  virtual void release(size_t layer, bool backward) = 0;
};

/// A network ready to train: a flat list of layers and the memory of all
/// their parameters.
///
/// The flat-buffer contract: every parameter of every layer lives in ONE
/// contiguous buffer, parameters(), in layer order (layer 0's weight first),
/// and every gradient at the same offset in a second buffer, gradients().
/// Layers hold views into them. So an optimizer updates the whole model in
/// one fused pass, a communicator all-reduces gradients() in place (whole or
/// in buckets of contiguous ranges), and a checkpoint is one write per
/// buffer. The buffers never move or resize after create(): views and raw
/// pointers into them stay valid for the model's lifetime.
///
/// backward() adds into gradients() (micro-batches accumulate), or
/// overwrites them for the first micro-batch after a step, and reports
/// each layer's gradient range, last layer first, through the gradient-ready
/// hook as soon as that layer is done, so that a gradient sync can start
/// reducing while earlier layers are still computing.
///
/// Model state that is not a parameter (BatchNorm's running statistics)
/// lives in a third flat buffer, buffers(), laid out the same way (slots in
/// buffer_slots(), "3.running_mean"). It is written by forward(training =
/// true) only, never all-reduced or stepped by an optimizer, and is saved
/// and restored with the parameters. Each replica updates its own from its
/// own batches, so replicas drift apart until the replica runner averages
/// them across the group at the end of each epoch (see
/// train::replica_runner::train_epoch), before validation and checkpoints.
///
/// Not thread-safe. On CUDA, forward/backward only enqueue work.
class model {
public:
  /// Checks that the layers chain from input_features (the error names the
  /// first layer that does not fit) and that every layer has kernels for
  /// options.where (unavailable naming the layer; every layer of dtrain has
  /// CUDA kernels, and a CPU-only build fails at the allocation, with
  /// unavailable too), then allocates, initializes from the
  /// seed (on the host: the same values on every device) and binds. Sizes
  /// that overflow, or memory that cannot be had, are errors naming the
  /// layer (invalid_argument, resource_exhausted), never an abort.
  static result<std::unique_ptr<model>> create(std::unique_ptr<sequential> layers,
                                               const model_options& options);

  int64_t input_features() const { return input_features_; }
  int64_t output_features() const { return output_features_; }
  int64_t parameter_count() const { return params_.numel(); }
  device where() const { return options_.where; }
  precision compute_precision() const { return options_.compute; }
  /// Changes what later forward() and backward() calls compute in (the
  /// replica runner applies the trainer's `precision` to the model an
  /// operator built). Call between a backward and the next forward.
  void set_compute_precision(precision p) { options_.compute = p; }
  const std::vector<parameter_slot>& slots() const { return slots_; }
  const sequential& layers() const { return *layers_; }
  sequential& layers() { return *layers_; }
  /// One line per layer with its parameter count.
  std::string summary() const;

  tensor& parameters() { return params_; }
  const tensor& parameters() const { return params_; }
  tensor& gradients() { return grads_; }
  const tensor& gradients() const { return grads_; }
  /// Non-parameter model state (may have no elements: an undefined-free
  /// empty tensor of shape [0]).
  tensor& buffers() { return buffers_; }
  const tensor& buffers() const { return buffers_; }
  int64_t buffer_count() const { return buffers_.numel(); }
  const std::vector<parameter_slot>& buffer_slots() const { return buffer_slots_; }

  /// Output [batch, output_features] for x [batch, input_features] on the
  /// model's device; the reference is valid until the next forward. A wrong
  /// shape or device is an error naming both; a layer that cannot compute
  /// (no kernel on this device, an index out of range) is its error naming
  /// the layer, and backward() then needs a new forward.
  result<const tensor*> forward(const tensor& x, bool training);
  /// Adds d(loss)/d(parameters) into gradients(), given d(loss)/d(output)
  /// of the last forward(training = true); with accumulate = false,
  /// overwrites them instead (no zero_grad() needed first).
  status backward(const tensor& grad_output, bool accumulate = true);
  void zero_grad();
  /// Moves the gradients into `storage` (as many floats, on the model's
  /// device, reading as zeros: a communicator's shared_buffer()), their
  /// values copied, and rebinds the layers to it; views of the old
  /// gradients() stay valid but are no longer the model's. Before the
  /// first backward() the gradients are create()'s zeros and nothing is
  /// copied, so that the storage's pages stay untouched until written.
  status adopt_gradients(tensor storage);
  /// As adopt_gradients, for the parameters; with copy = false nothing is
  /// copied (the caller has put into `storage` what it needs of them).
  status adopt_parameters(tensor storage, bool copy = true);
  /// Calls `window` around every layer's forward and backward (null: none,
  /// the default); the caller keeps it alive while it is set.
  void set_parameter_window(parameter_window* window) { window_ = window; }
  size_t layer_count() const { return layer_ranges_.size(); }
  /// [first, end) of layer i's parameters in parameters() (first == end
  /// for a layer without any).
  std::pair<int64_t, int64_t> layer_range(size_t i) const { return layer_ranges_[i]; }
  /// Synchronized BatchNorm: every batch_norm layer's training statistics
  /// become the group's, reduced through `reduce` (module.hpp); empty: each
  /// replica's own (the default).
  void set_statistics_reducer(const statistics_reducer& reduce) {
    layers_->set_statistics_reducer(reduce);
  }

  /// Called with (offset, count) of each layer's gradients in gradients()
  /// as backward() completes that layer, in reverse layer order.
  using gradient_ready_hook = std::function<void(int64_t offset, int64_t count)>;
  void set_gradient_ready_hook(gradient_ready_hook hook) { hook_ = std::move(hook); }
  /// Calls the gradient-ready hook: for a layer that knows, during its own
  /// backward, that part of its gradients is final (the libtorch adapter
  /// reports each parameter as autograd accumulates it). The range must be
  /// final until the next backward; backward() still reports the whole
  /// layer when the layer returns.
  void report_gradients_ready(int64_t offset, int64_t count) {
    if (hook_)
      hook_(offset, count);
  }

private:
  model(std::unique_ptr<sequential> layers, const model_options& options);
  /// Lays out slots_ and layer_ranges_; errors name the layer whose size
  /// overflows or cannot fit in this machine's memory.
  status plan_slots();
  status allocate();
  /// Lays out buffer_slots_, allocates buffers_ with their initial values
  /// and binds them.
  status allocate_buffers();
  /// Hands each layer its views of params_ and grads_.
  void bind_layers();

  std::unique_ptr<sequential> layers_;
  model_options options_;
  int64_t input_features_ = 0;
  int64_t output_features_ = 0;
  tensor params_, grads_;
  std::vector<parameter_slot> slots_;
  tensor buffers_;
  std::vector<parameter_slot> buffer_slots_;
  // Per layer: [first, end) element range of its parameters.
  std::vector<std::pair<int64_t, int64_t>> layer_ranges_;
  uint64_t passes_ = 0;
  bool have_activations_ = false;
  bool gradients_written_ = false;  // by a backward() since create()
  int64_t last_batch_ = -1;
  gradient_ready_hook hook_;
  parameter_window* window_ = nullptr;
};

} // namespace dtrain::nn
