#include "dtrain/nn/cnn.hpp"

#include "dtrain/nn/linear.hpp"

namespace dtrain::nn {

cnn_builder::cnn_builder(image_shape input)
  : shape_(input), features_(input.features()), net_(std::make_unique<sequential>()) {}

void cnn_builder::append(std::unique_ptr<module> layer) {
  if (!error_.is_ok() || net_ == nullptr)
    return;
  auto out = layer->output_features(features_);
  if (!out) {
    error_ = out.error().with_context("cnn layer " + std::to_string(net_->layer_count() + 1) +
                                      " " + layer->describe());
    return;
  }
  features_ = *out;
  net_->add(std::move(layer));
}

template <typename Layer>
void cnn_builder::append_image(std::unique_ptr<Layer> layer) {
  if (!error_.is_ok() || net_ == nullptr)
    return;
  if (flat_) {
    error_ = invalid_argument("cnn layer " + std::to_string(net_->layer_count() + 1) + " " +
                              layer->describe() +
                              " comes after a linear layer: its input is no longer an image");
    return;
  }
  image_shape next = layer->output_shape();
  append(std::move(layer));
  if (error_.is_ok())
    shape_ = next;
}

cnn_builder& cnn_builder::conv2d(int64_t out_channels, const conv2d_options& options) {
  append_image(std::make_unique<nn::conv2d>(shape_, out_channels, options));
  return *this;
}

cnn_builder& cnn_builder::conv2d(int64_t out_channels, int64_t kernel, int64_t stride,
                                 int64_t padding) {
  return conv2d(out_channels, conv2d_options::square(kernel, stride, padding));
}

cnn_builder& cnn_builder::max_pool2d(int64_t kernel, int64_t stride, int64_t padding) {
  append_image(nn::max_pool2d(shape_, kernel, stride, padding));
  return *this;
}

cnn_builder& cnn_builder::avg_pool2d(int64_t kernel, int64_t stride, int64_t padding) {
  append_image(nn::avg_pool2d(shape_, kernel, stride, padding));
  return *this;
}

cnn_builder& cnn_builder::global_avg_pool() {
  append_image(nn::global_avg_pool(shape_));
  return *this;
}

cnn_builder& cnn_builder::activation(ops::activation kind) {
  append(std::make_unique<activation_layer>(kind));
  return *this;
}

cnn_builder& cnn_builder::dropout(float p) {
  append(std::make_unique<nn::dropout>(p));
  return *this;
}

cnn_builder& cnn_builder::linear(int64_t out_features) {
  append(std::make_unique<nn::linear>(features_, out_features));
  flat_ = true;
  return *this;
}

result<std::unique_ptr<sequential>> cnn_builder::build() {
  if (!error_.is_ok())
    return error_;
  if (net_ == nullptr)
    return invalid_argument("cnn_builder::build() was already called");
  return std::move(net_);
}

result<std::unique_ptr<sequential>> make_cnn(const cnn_spec& spec) {
  cnn_builder b(spec.input);
  for (int64_t channels : spec.conv) {
    b.conv2d(channels, spec.kernel, 1, spec.kernel / 2).activation(spec.act);
    if (spec.pool != 1)
      b.max_pool2d(spec.pool);
  }
  for (int64_t width : spec.hidden) {
    b.linear(width).activation(spec.act);
    if (spec.dropout > 0.0f)
      b.dropout(spec.dropout);
  }
  b.linear(spec.outputs);
  return b.build();
}

} // namespace dtrain::nn
