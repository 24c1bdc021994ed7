#include "dtrain/nn/model.hpp"

#include <cstdio>
#include <limits>

#include "dtrain/core/check.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

model::model(std::unique_ptr<sequential> layers, const model_options& options)
  : layers_(std::move(layers)), options_(options), input_features_(options.input_features) {}

result<std::unique_ptr<model>> model::create(std::unique_ptr<sequential> layers,
                                             const model_options& options) {
  if (layers == nullptr || layers->layer_count() == 0)
    return invalid_argument("a model needs at least one layer");
  if (options.input_features <= 0)
    return invalid_argument("model input_features must be positive, got " +
                            std::to_string(options.input_features));
  DTRAIN_ASSIGN_OR_RETURN(int64_t outputs, layers->output_features(options.input_features));
  DTRAIN_RETURN_IF_ERROR(layers->check_device(options.where));
  layers->fuse_epilogues();
  std::unique_ptr<model> m(new model(std::move(layers), options));
  m->output_features_ = outputs;
  DTRAIN_RETURN_IF_ERROR(m->allocate());
  return m;
}

namespace {

std::string layer_name(const sequential& layers, size_t i) {
  return "layer " + std::to_string(i + 1) + " " + layers.layer(i).describe();
}

} // namespace

status model::plan_slots() {
  int64_t total = 0;
  const size_t limit = host_allocation_limit();
  for (size_t i = 0; i < layers_->layer_count(); ++i) {
    int64_t first = total;
    for (auto& spec : layers_->layer(i).parameter_specs()) {
      auto bytes = checked_bytes(spec.shape);
      if (!bytes)
        return bytes.error().with_context(layer_name(*layers_, i) + ": parameter " + spec.name);
      if (*bytes > limit)
        return resource_exhausted(layer_name(*layers_, i) + ": parameter " + spec.name + " " +
                                  shape_string(spec.shape) + " needs " + std::to_string(*bytes) +
                                  " bytes, more than this machine's " + std::to_string(limit) +
                                  " bytes of memory");
      auto count = static_cast<int64_t>(*bytes / sizeof(float));
      if (count > std::numeric_limits<int64_t>::max() - total)
        return invalid_argument(layer_name(*layers_, i) +
                                ": the model's parameter count does not fit in 64 bits");
      slots_.push_back({std::to_string(i) + "." + spec.name, spec.shape, total, count});
      total += count;
    }
    layer_ranges_.emplace_back(first, total);
  }
  return status::ok();
}

status model::allocate() {
  DTRAIN_RETURN_IF_ERROR(plan_slots());
  const int64_t total = layer_ranges_.empty() ? 0 : layer_ranges_.back().second;
  const std::string what = "the model's " + std::to_string(total) + " parameters";
  // On the host, parameters and gradients together: each alone may fit
  // where both do not, and the kernel would grant both, then kill us.
  if (options_.where.is_cpu() &&
      static_cast<uint64_t>(total) > host_allocation_limit() / (2 * sizeof(float)))
    return resource_exhausted(what + " and their gradients need " +
                              std::to_string(2 * sizeof(float) * static_cast<uint64_t>(total)) +
                              " bytes, more than this machine's " +
                              std::to_string(host_allocation_limit()) + " bytes of memory");
  auto zeroed = tensor::try_zeros({total});
  if (!zeroed)
    return zeroed.error().with_context(what);
  tensor host = std::move(*zeroed);
  // Initialize on the host so every device starts from the same values.
  rng gen(options_.seed);
  size_t slot = 0;
  for (size_t i = 0; i < layers_->layer_count(); ++i) {
    std::vector<tensor> views;
    for (auto& spec : layers_->layer(i).parameter_specs())
      views.push_back(host.view(slots_[slot++].offset, spec.shape));
    layers_->layer(i).initialize(views, gen);
  }
  if (options_.where.is_cpu()) {
    params_ = host;
  } else {
    DTRAIN_ASSIGN_OR_RETURN(params_, tensor::try_empty({total}, options_.where));
    params_.copy_from(host);
  }
  auto grads = tensor::try_zeros({total}, options_.where);
  if (!grads)
    return grads.error().with_context("the gradients of " + what);
  grads_ = std::move(*grads);
  bind_layers();
  return allocate_buffers();
}

status model::allocate_buffers() {
  std::vector<buffer_spec> specs = layers_->buffer_specs();
  int64_t total = 0;
  for (auto& spec : specs) {
    auto count = checked_numel(spec.shape);
    if (!count)
      return count.error().with_context("model buffer " + spec.name);
    if (*count > std::numeric_limits<int64_t>::max() - total)
      return invalid_argument("model buffer " + spec.name +
                              ": the model's buffer count does not fit in 64 bits");
    buffer_slots_.push_back({spec.name, spec.shape, total, *count});
    total += *count;
  }
  auto made = tensor::try_empty({total});
  if (!made)
    return made.error().with_context("the model's " + std::to_string(total) + " buffer values");
  tensor host = std::move(*made);
  for (size_t i = 0; i < specs.size(); ++i)
    for (int64_t j = 0; j < buffer_slots_[i].count; ++j)
      host.data()[buffer_slots_[i].offset + j] = specs[i].initial;
  if (options_.where.is_cpu()) {
    buffers_ = host;
  } else {
    DTRAIN_ASSIGN_OR_RETURN(buffers_, tensor::try_empty({total}, options_.where));
    buffers_.copy_from(host);
  }
  std::vector<tensor> views;
  for (auto& slot : buffer_slots_)
    views.push_back(buffers_.view(slot.offset, slot.shape));
  layers_->bind_buffers(std::move(views));
  return status::ok();
}

void model::bind_layers() {
  size_t slot = 0;
  for (size_t i = 0; i < layers_->layer_count(); ++i) {
    std::vector<tensor> p, g;
    for (auto& spec : layers_->layer(i).parameter_specs()) {
      p.push_back(params_.view(slots_[slot].offset, spec.shape));
      g.push_back(grads_.view(slots_[slot].offset, spec.shape));
      ++slot;
    }
    layers_->layer(i).bind(std::move(p), std::move(g));
  }
}

std::string model::summary() const {
  std::string out;
  for (size_t i = 0; i < layers_->layer_count(); ++i) {
    auto [first, end] = layer_ranges_[i];
    out += "  " + std::to_string(i) + ": " + layers_->layer(i).describe();
    if (end > first)
      out += "  (" + std::to_string(end - first) + " parameters)";
    out += "\n";
  }
  return out + "  total: " + std::to_string(parameter_count()) + " parameters on " +
         options_.where.to_string();
}

result<const tensor*> model::forward(const tensor& x, bool training) {
  if (!x.defined() || x.dim() != 2 || x.size(1) != input_features_)
    return shape_mismatch("model input must be [batch, " + std::to_string(input_features_) +
                          "], got " + (x.defined() ? shape_string(x.shape()) : "undefined"));
  if (x.where() != options_.where)
    return invalid_argument("model input is on " + x.where().to_string() +
                            " but the model is on " + options_.where.to_string());
  forward_context ctx{training, hash64(options_.seed ^ 0x5eedd00dULL, passes_++),
                      options_.compute};
  const tensor* h = &x;
  if (window_ == nullptr) {
    h = &layers_->forward(x, ctx);
  } else {
    for (size_t i = 0; i < layers_->layer_count(); ++i) {
      if (status s = window_->acquire(i, false); !s.is_ok()) {
        have_activations_ = false;
        return s.with_context("before layer " + std::to_string(i + 1) + " " +
                              layers_->layer(i).describe());
      }
      h = &layers_->layer(i).forward(*h, ctx);
      window_->release(i, false);
    }
  }
  const tensor& out = *h;
  if (status s = layers_->last_status(); !s.is_ok()) {
    have_activations_ = false;
    return s;
  }
  have_activations_ = training;
  last_batch_ = x.size(0);
  return &out;
}

status model::backward(const tensor& grad_output, bool accumulate) {
  if (!have_activations_)
    return invalid_argument("backward() needs a preceding forward(x, training = true)");
  if (!grad_output.defined() || grad_output.dim() != 2 ||
      grad_output.size(0) != last_batch_ || grad_output.size(1) != output_features_)
    return shape_mismatch("gradient of the output must be [" + std::to_string(last_batch_) +
                          ", " + std::to_string(output_features_) + "], got " +
                          (grad_output.defined() ? shape_string(grad_output.shape()) : "undefined"));
  have_activations_ = false;
  gradients_written_ = true;
  const tensor* g = &grad_output;
  for (size_t i = layers_->layer_count(); i-- > 0;) {
    if (window_ != nullptr)
      if (status s = window_->acquire(i, true); !s.is_ok())
        return s.with_context("before the backward of layer " + std::to_string(i + 1) + " " +
                              layers_->layer(i).describe());
    g = &layers_->layer(i).backward(*g, {i > 0, accumulate, options_.compute});
    auto [first, end] = layer_ranges_[i];
    if (hook_ && end > first)
      hook_(first, end - first);
    if (window_ != nullptr)
      window_->release(i, true);
  }
  return layers_->last_status();
}

void model::zero_grad() { ops::fill(grads_, 0.0f); }

namespace {

status check_storage(const tensor& storage, const tensor& now, const char* what) {
  if (storage.defined() && storage.numel() == now.numel() && storage.where() == now.where())
    return status::ok();
  return invalid_argument(std::string("adopt_") + what + ": the model has " +
                          std::to_string(now.numel()) + " " + what + " on " +
                          now.where().to_string() + ", the storage " +
                          (storage.defined() ? std::to_string(storage.numel()) + " floats on " +
                                                   storage.where().to_string()
                                             : std::string("is undefined")));
}

} // namespace

status model::adopt_gradients(tensor storage) {
  DTRAIN_RETURN_IF_ERROR(check_storage(storage, grads_, "gradients"));
  if (gradients_written_)
    storage.copy_from(grads_);
  grads_ = storage.reshape({grads_.numel()});
  bind_layers();
  return status::ok();
}

status model::adopt_parameters(tensor storage, bool copy) {
  DTRAIN_RETURN_IF_ERROR(check_storage(storage, params_, "parameters"));
  if (copy)
    storage.copy_from(params_);
  params_ = storage.reshape({params_.numel()});
  bind_layers();
  return status::ok();
}

} // namespace dtrain::nn
