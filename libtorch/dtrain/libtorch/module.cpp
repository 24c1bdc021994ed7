#include "dtrain/libtorch/module.hpp"

#include <numeric>
#include <set>

#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>

#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::libtorch {

namespace {

std::vector<int64_t> sizes_of(const shape_t& shape) { return {shape.begin(), shape.end()}; }

shape_t shape_of(const at::Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

} // namespace

status torch_error(const std::string& where, const std::exception& e) {
  std::string what = e.what();
  if (auto* c10 = dynamic_cast<const c10::Error*>(&e))
    what = c10->what_without_backtrace();
  return status(error_code::internal, where + ": " + what);
}

at::Tensor as_torch(const tensor& t) {
  auto where = torch_device(t.where());
  DTRAIN_CHECK(where.is_ok(), where.error().message().c_str());
  // The deleter holds a handle on t's storage, so the view keeps it alive.
  tensor keep = t;
  return torch::from_blob(const_cast<float*>(t.data()), sizes_of(t.shape()),
                          [keep](void*) mutable { keep = tensor(); },
                          torch::TensorOptions().dtype(torch::kFloat32).device(*where));
}

result<c10::Device> torch_device(device where) {
  if (where.is_cpu())
    return c10::Device(c10::kCPU);
  if (!torch::cuda::is_available())
    return unavailable("this libtorch has no CUDA device for " + where.to_string());
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(where.index));
}

// ---- module_layer -----------------------------------------------------------

module_layer::module_layer(torch::nn::AnyModule module, module_options options, int64_t outputs)
  : module_(std::move(module)), options_(std::move(options)), outputs_(outputs) {
  std::set<const void*> seen;
  for (const auto& item : module_.ptr()->named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad())
      continue;  // frozen: the module's own, never synced or stepped
    if (!seen.insert(item.value().unsafeGetTensorImpl()).second)
      continue;  // a tied weight, listed again under another name: one slot
    names_.push_back(item.key());
    params_.push_back(item.value());
    offsets_.push_back(total_);
    total_ += item.value().numel();
  }
  for (const auto& item : module_.ptr()->named_buffers(/*recurse=*/true)) {
    if (item.value().scalar_type() == torch::kFloat32) {
      float_buffer_names_.push_back(item.key());
      float_buffers_.push_back(item.value());
    } else {
      other_buffers_.push_back(item.value());
    }
  }
  ready_.assign(params_.size(), 0);
  lowest_ = params_.size();
}

module_layer::~module_layer() { remove_hooks(); }

std::string module_layer::describe() const {
  return "libtorch " + module_.ptr()->name() + " (" + std::to_string(params_.size()) +
         " parameters)";
}

result<int64_t> module_layer::output_features(int64_t input) const {
  int64_t expected = std::accumulate(options_.input_shape.begin(), options_.input_shape.end(),
                                     int64_t{1}, std::multiplies<int64_t>());
  if (input != expected)
    return shape_mismatch("libtorch module takes samples of " + shape_string(options_.input_shape) +
                          " (" + std::to_string(expected) + " features), the model gives " +
                          std::to_string(input));
  return outputs_;
}

status module_layer::check_device(device where) const {
  return torch_device(where).to_status();
}

std::vector<nn::parameter_spec> module_layer::parameter_specs() const {
  std::vector<nn::parameter_spec> out;
  for (size_t i = 0; i < params_.size(); ++i)
    out.push_back({names_[i], shape_of(params_[i])});
  return out;
}

void module_layer::initialize(std::vector<tensor>& params, rng&) const {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i)
    as_torch(params[i]).copy_(params_[i].detach().to(torch::kCPU));
}

void module_layer::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].set_data(as_torch(params[i]));
    params_[i].mutable_grad() = as_torch(grads[i]);
  }
  param_views_ = std::move(params);
  grads_ = std::move(grads);
  install_hooks();
}

std::vector<nn::buffer_spec> module_layer::buffer_specs() const {
  std::vector<nn::buffer_spec> out;
  for (size_t i = 0; i < float_buffers_.size(); ++i)
    out.push_back({float_buffer_names_[i], shape_of(float_buffers_[i]), 0.0f});
  return out;
}

void module_layer::bind_buffers(std::vector<tensor> buffers) {
  // The model fills its buffers with buffer_spec::initial (0 here); the
  // module's own values (running_var's ones, anything a module computed)
  // are the initial state. A restore writes into the flat buffer later.
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < float_buffers_.size(); ++i) {
    at::Tensor view = as_torch(buffers[i]);
    view.copy_(float_buffers_[i]);
    float_buffers_[i].set_data(view);
  }
}

void module_layer::install_hooks() {
  // Rebinding (the gradients moved into a communicator's shared buffer)
  // keeps the parameters and their accumulators: hooks are added once.
  if (!accumulators_.empty())
    return;
  for (size_t i = 0; i < params_.size(); ++i) {
    // The variable holds its accumulator weakly; holding it here keeps the
    // same node (and its hook) for every graph, as DDP's reducer does.
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params_[i]);
    auto hook = std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs,
                  const torch::autograd::variable_list&) {
          on_ready(i);
          return outputs;
        });
    hook_keys_.push_back(acc->add_post_hook(std::move(hook)));
    accumulators_.push_back(std::move(acc));
  }
}

void module_layer::remove_hooks() {
  for (size_t i = 0; i < accumulators_.size(); ++i)
    accumulators_[i]->del_post_hook(hook_keys_[i]);
  accumulators_.clear();
  hook_keys_.clear();
}

void module_layer::begin_backward() {
  std::fill(ready_.begin(), ready_.end(), 0);
  lowest_ = params_.size();
}

void module_layer::on_ready(size_t index) {
  if (ready_[index])
    return;
  ready_[index] = 1;
  size_t low = lowest_;
  while (low > 0 && ready_[low - 1])
    --low;
  if (low == lowest_)
    return;  // a gap remains after this parameter: not a longer suffix yet
  lowest_ = low;
  if (report_)
    report_(offsets_[low], total_ - offsets_[low]);
}

void follow_replica_threads() {
  if (int share = std::max(1, blas_threads()); at::get_num_threads() != share)
    at::set_num_threads(share);
}

at::Tensor module_layer::forward_torch(const at::Tensor& x, bool training) {
  follow_replica_threads();
  module_.ptr()->train(training);
  if (training)
    return module_.forward(x);
  torch::NoGradGuard no_grad;
  return module_.forward(x);
}

const tensor& module_layer::forward(const tensor& x, const nn::forward_context& ctx) {
  last_status_ = status::ok();
  begin_backward();
  out_ = at::Tensor();
  const int64_t batch = x.size(0);
  if (ctx.compute != precision::fp32) {
    // dtrain's mixed precision is its own layers' GEMMs; a libtorch module
    // computes as its code says (torch::autocast in its forward).
    last_status_ = invalid_argument(std::string("a libtorch module computes as its own code "
                                                "says; the trainer's precision must be fp32, "
                                                "not ") + to_string(ctx.compute));
    output_ = tensor::zeros({batch, outputs_}, options_.where);
    return output_;
  }
  try {
    std::vector<int64_t> shape{batch};
    shape.insert(shape.end(), options_.input_shape.begin(), options_.input_shape.end());
    at::Tensor out = forward_torch(as_torch(x).view(shape), ctx.training);
    if (out.dim() < 1 || out.size(0) != batch || out.numel() != batch * outputs_ ||
        out.scalar_type() != torch::kFloat32 || out.device() != *torch_device(options_.where)) {
      last_status_ = shape_mismatch("libtorch module returned " + out.toString() + " " +
                                    shape_string(shape_of(out)) + " on " + out.device().str() +
                                    " for a batch of " +
                                    std::to_string(batch) + ", not float [" +
                                    std::to_string(batch) + ", " + std::to_string(outputs_) +
                                    "] on " + options_.where.to_string());
    } else {
      out = out.reshape({batch, outputs_}).contiguous();
      if (ctx.training)
        out_ = out;
      // The view dtrain sees holds the values only, not the graph.
      auto owner = std::make_shared<at::Tensor>(out.detach());
      output_ = tensor::over(out.data_ptr<float>(), {batch, outputs_}, owner, options_.where);
      return output_;
    }
  } catch (const std::exception& e) {
    last_status_ = torch_error("libtorch module forward", e);
  }
  output_ = tensor::zeros({batch, outputs_}, options_.where);
  return output_;
}

const tensor& module_layer::backward(const tensor& dy, const nn::backward_context& ctx) {
  if (ctx.need_input_grad) {
    last_status_ = invalid_argument("a libtorch module must be its model's only layer");
    return no_input_grad_;
  }
  if (!out_.defined()) {
    last_status_ = invalid_argument("libtorch module backward without a training forward");
    return no_input_grad_;
  }
  try {
    if (!ctx.accumulate)
      for (auto& g : grads_)
        ops::fill(g, 0.0f);
    at::Tensor out = std::move(out_);
    out_ = at::Tensor();
    torch::autograd::backward({out}, {as_torch(dy).view_as(out)});
    last_status_ = check_bound();
  } catch (const std::exception& e) {
    last_status_ = torch_error("libtorch module backward", e);
  }
  return no_input_grad_;
}

status module_layer::check_bound() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].data_ptr() != static_cast<const void*>(param_views_[i].data()))
      return invalid_argument(
          "parameter '" + names_[i] + "' no longer lives in dtrain's parameter buffer (its data "
          "was replaced after make_model: module->to(), torch::load, set_data)");
    const at::Tensor& grad = params_[i].grad();
    if (!grad.defined() || grad.data_ptr() != static_cast<const void*>(grads_[i].data()))
      return invalid_argument(
          "parameter '" + names_[i] + "': its .grad is no longer the gradient buffer dtrain "
          "syncs (replaced by a backward with create_graph, zero_grad(/*set_to_none=*/true) or "
          "an assignment); gradients must accumulate in place");
  }
  return status::ok();
}

std::vector<char> module_layer::extra_state() const {
  if (other_buffers_.empty())
    return {};
  c10::List<at::Tensor> list;
  for (const auto& b : other_buffers_)
    list.push_back(b.detach().to(torch::kCPU));
  return torch::pickle_save(c10::IValue(list));
}

status module_layer::load_extra_state(const std::vector<char>& state) {
  if (state.empty())
    return other_buffers_.empty()
               ? status::ok()
               : corrupt_data("the checkpoint has none of the module's " +
                              std::to_string(other_buffers_.size()) + " non-float buffers");
  try {
    c10::IValue value = torch::pickle_load(state);
    auto list = value.toTensorList();
    if (list.size() != other_buffers_.size())
      return corrupt_data("the checkpoint has " + std::to_string(list.size()) +
                          " non-float buffers, the module " +
                          std::to_string(other_buffers_.size()));
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < other_buffers_.size(); ++i)
      other_buffers_[i].copy_(list.get(i));
  } catch (const std::exception& e) {
    return corrupt_data(torch_error("the module's non-float buffers", e).message());
  }
  return status::ok();
}

// ---- make_model -------------------------------------------------------------

result<std::unique_ptr<nn::model>> make_model(torch::nn::AnyModule module,
                                              const module_options& options) {
  if (module.is_empty())
    return invalid_argument("make_model: no module");
  if (options.input_shape.empty())
    return invalid_argument("make_model: input_shape is empty (one sample's shape, e.g. {1, 28, 28})");
  for (int64_t d : options.input_shape)
    if (d < 1)
      return invalid_argument("make_model: input_shape " + shape_string(options.input_shape) +
                              " has a dimension below 1");
  DTRAIN_ASSIGN_OR_RETURN(c10::Device where, torch_device(options.where));
  int64_t outputs = 0, inputs = 1;
  for (int64_t d : options.input_shape)
    inputs *= d;
  try {
    for (const auto& p : module.ptr()->parameters())
      if (p.device() != where)
        return invalid_argument("make_model: the module's parameters are on " + p.device().str() +
                                ", the model is on " + options.where.to_string());
    // One sample through the module, in evaluation mode: its output width.
    std::vector<int64_t> shape{1};
    shape.insert(shape.end(), options.input_shape.begin(), options.input_shape.end());
    bool was_training = module.ptr()->is_training();
    module.ptr()->eval();
    at::Tensor out;
    {
      torch::NoGradGuard no_grad;
      out = module.forward(torch::zeros(shape, torch::TensorOptions().device(where)));
    }
    module.ptr()->train(was_training);
    if (out.dim() < 1 || out.size(0) != 1 || out.numel() < 1)
      return shape_mismatch("make_model: the module returned " + shape_string(shape_of(out)) +
                            " for one sample; its first dimension must be the batch");
    outputs = out.numel();
  } catch (const std::exception& e) {
    return torch_error("make_model: a forward of one sample " +
                           shape_string(options.input_shape) + " failed",
                       e);
  }
  auto layer = std::make_unique<module_layer>(std::move(module), options, outputs);
  if (layer->parameters().empty())
    return invalid_argument("make_model: the module has no trainable parameters");
  module_layer* raw = layer.get();
  auto layers = std::make_unique<nn::sequential>();
  layers->add(std::move(layer));
  DTRAIN_ASSIGN_OR_RETURN(auto m, nn::model::create(std::move(layers),
                                                    {inputs, options.where, 0}));
  nn::model* model = m.get();
  raw->set_ready_reporter([model](int64_t offset, int64_t count) {
    model->report_gradients_ready(offset, count);
  });
  return m;
}

module_layer* layer_of(nn::model& m) {
  if (m.layers().layer_count() != 1)
    return nullptr;
  return dynamic_cast<module_layer*>(&m.layers().layer(0));
}

} // namespace dtrain::libtorch
