#include "dtrain/nn/layers.hpp"

#include <cstdio>

#include "dtrain/nn/linear.hpp"

namespace dtrain::nn {

const tensor& activation_layer::forward(const tensor& x, const forward_context&) {
  if (fused_)
    return x;  // the linear layer before it applied it
  input_ = &x;
  ensure(output_, x.shape(), x.where());
  ops::activation_forward(kind_, x, output_);
  return output_;
}

const tensor& activation_layer::backward(const tensor& dy, const backward_context&) {
  if (fused_)
    return dy;  // the linear layer before it takes it through the activation
  ensure(input_grad_, dy.shape(), dy.where());
  ops::activation_backward(kind_, *input_, output_, dy, input_grad_);
  return input_grad_;
}

std::string dropout::describe() const {
  char text[32];
  std::snprintf(text, sizeof text, "dropout(%g)", static_cast<double>(p_));
  return text;
}

result<int64_t> dropout::output_features(int64_t input) const {
  if (!(p_ >= 0.0f && p_ < 1.0f))
    return invalid_argument(describe() + ": p must be in [0, 1)");
  return input;
}

const tensor& dropout::forward(const tensor& x, const forward_context& ctx) {
  input_ = &x;
  active_ = ctx.training && p_ > 0.0f;
  if (!active_)
    return x;
  ensure(output_, x.shape(), x.where());
  ensure(mask_, x.shape(), x.where());
  ops::dropout_forward(x, output_, mask_, p_, ctx.seed);
  return output_;
}

const tensor& dropout::backward(const tensor& dy, const backward_context&) {
  if (!active_)
    return dy;
  ensure(input_grad_, dy.shape(), dy.where());
  ops::multiply(dy, mask_, input_grad_);
  return input_grad_;
}

void sequential::fuse_epilogues() {
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    auto* before = dynamic_cast<linear*>(layers_[i].get());
    auto* after = dynamic_cast<activation_layer*>(layers_[i + 1].get());
    if (before == nullptr || after == nullptr || after->fused() ||
        after->kind() == ops::activation::gelu)
      continue;
    before->fuse_activation(after->kind());
    after->fuse_into_previous();
  }
}

sequential::sequential(std::vector<std::unique_ptr<module>> layers) {
  for (auto& layer : layers)
    add(std::move(layer));
}

void sequential::add(std::unique_ptr<module> layer) {
  if (auto* nested = dynamic_cast<sequential*>(layer.get())) {
    for (auto& inner : nested->layers_)
      layers_.push_back(std::move(inner));
    return;
  }
  layers_.push_back(std::move(layer));
}

std::string sequential::describe() const {
  std::string out = "sequential(";
  for (size_t i = 0; i < layers_.size(); ++i)
    out += (i > 0 ? ", " : "") + layers_[i]->describe();
  return out + ")";
}

result<int64_t> sequential::output_features(int64_t input) const {
  int64_t features = input;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto out = layers_[i]->output_features(features);
    if (!out) {
      std::string where = "layer " + std::to_string(i + 1) + " " + layers_[i]->describe();
      std::string from = i == 0 ? "the model input"
                                : "layer " + std::to_string(i) + " " + layers_[i - 1]->describe();
      return out.error().with_context(where + " does not fit after " + from + " (" +
                                      std::to_string(features) + " features)");
    }
    features = *out;
  }
  return features;
}

status sequential::check_device(device where) const {
  for (size_t i = 0; i < layers_.size(); ++i) {
    status st = layers_[i]->check_device(where);
    if (!st.is_ok())
      return st.with_context("layer " + std::to_string(i + 1) + " " + layers_[i]->describe());
  }
  return status::ok();
}

std::vector<parameter_spec> sequential::parameter_specs() const {
  std::vector<parameter_spec> all;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (auto& spec : layers_[i]->parameter_specs())
      all.push_back({std::to_string(i) + "." + spec.name, spec.shape});
  return all;
}

void sequential::initialize(std::vector<tensor>& params, rng& gen) const {
  size_t next = 0;
  for (auto& layer : layers_) {
    size_t count = layer->parameter_specs().size();
    std::vector<tensor> mine(params.begin() + next, params.begin() + next + count);
    layer->initialize(mine, gen);
    next += count;
  }
}

void sequential::bind(std::vector<tensor> params, std::vector<tensor> grads) {
  size_t next = 0;
  for (auto& layer : layers_) {
    size_t count = layer->parameter_specs().size();
    layer->bind({params.begin() + next, params.begin() + next + count},
                {grads.begin() + next, grads.begin() + next + count});
    next += count;
  }
}

std::vector<buffer_spec> sequential::buffer_specs() const {
  std::vector<buffer_spec> all;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (auto& spec : layers_[i]->buffer_specs())
      all.push_back({std::to_string(i) + "." + spec.name, spec.shape, spec.initial});
  return all;
}

void sequential::bind_buffers(std::vector<tensor> buffers) {
  size_t next = 0;
  for (auto& layer : layers_) {
    size_t count = layer->buffer_specs().size();
    layer->bind_buffers({buffers.begin() + next, buffers.begin() + next + count});
    next += count;
  }
}

void sequential::set_statistics_reducer(const statistics_reducer& reduce) {
  for (auto& layer : layers_)
    layer->set_statistics_reducer(reduce);
}

status sequential::last_status() const {
  for (size_t i = 0; i < layers_.size(); ++i)
    if (status s = layers_[i]->last_status(); !s.is_ok())
      return s.with_context("layer " + std::to_string(i + 1) + " " + layers_[i]->describe());
  return status::ok();
}

const tensor& sequential::forward(const tensor& x, const forward_context& ctx) {
  const tensor* h = &x;
  for (auto& layer : layers_)
    h = &layer->forward(*h, ctx);
  return *h;
}

const tensor& sequential::backward(const tensor& dy, const backward_context& ctx) {
  const tensor* g = &dy;
  for (size_t i = layers_.size(); i-- > 0;)
    g = &layers_[i]->backward(*g, {i > 0 || ctx.need_input_grad, ctx.accumulate, ctx.compute});
  return layers_.empty() ? dy : *g;
}

result<ops::activation> parse_activation(const std::string& name) {
  if (name == "relu")
    return ops::activation::relu;
  if (name == "gelu")
    return ops::activation::gelu;
  if (name == "tanh")
    return ops::activation::tanh;
  return invalid_argument("unknown activation '" + name + "' (choose relu, gelu or tanh)");
}

std::unique_ptr<sequential> make_mlp(const mlp_spec& spec) {
  auto net = std::make_unique<sequential>();
  int64_t features = spec.inputs;
  for (int64_t width : spec.hidden) {
    net->add(std::make_unique<linear>(features, width));
    net->add(std::make_unique<activation_layer>(spec.act));
    if (spec.dropout > 0.0f)
      net->add(std::make_unique<dropout>(spec.dropout));
    features = width;
  }
  net->add(std::make_unique<linear>(features, spec.outputs));
  return net;
}

} // namespace dtrain::nn
