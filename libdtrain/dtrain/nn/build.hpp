#pragma once

#include <memory>
#include <utility>

#include "dtrain/nn/embedding.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/nn/norm.hpp"
#include "dtrain/nn/residual.hpp"

/// Models declared in a few lines, in the manner of PyTorch's C++ frontend:
///
///   using namespace dtrain::nn::build;
///   auto net = seq(linear(32, 64), layer_norm(64),
///                  residual(seq(linear(64, 64), relu(), linear(64, 64))),
///                  relu(), linear(64, 10));
///   auto m = dtrain::nn::model::create(std::move(net), {32});
///
/// Each function makes one layer as a std::unique_ptr the containers take
/// over; nothing is checked until model::create, which names the first
/// layer that does not fit.
namespace dtrain::nn::build {

/// Layers applied in order (a nested seq is flattened into it).
template <class... Layers>
std::unique_ptr<sequential> seq(Layers&&... layers) {
  auto out = std::make_unique<sequential>();
  (out->add(std::forward<Layers>(layers)), ...);
  return out;
}

/// x + inner(x).
inline std::unique_ptr<module> residual(std::unique_ptr<sequential> inner) {
  return std::make_unique<residual_block>(std::move(inner));
}

inline std::unique_ptr<module> linear(int64_t in, int64_t out, bool bias = true) {
  return std::make_unique<nn::linear>(in, out, bias);
}
inline std::unique_ptr<module> relu() {
  return std::make_unique<activation_layer>(ops::activation::relu);
}
inline std::unique_ptr<module> gelu() {
  return std::make_unique<activation_layer>(ops::activation::gelu);
}
inline std::unique_ptr<module> tanh() {
  return std::make_unique<activation_layer>(ops::activation::tanh);
}
inline std::unique_ptr<module> dropout(float p) { return std::make_unique<nn::dropout>(p); }
inline std::unique_ptr<module> layer_norm(int64_t features) {
  return std::make_unique<nn::layer_norm>(features);
}
/// Over [batch, channels] inputs.
inline std::unique_ptr<module> batch_norm1d(int64_t channels) {
  return std::make_unique<batch_norm>(channels);
}
/// Over [batch, channels * height * width] inputs in NCHW order.
inline std::unique_ptr<module> batch_norm2d(int64_t channels, int64_t height, int64_t width) {
  return std::make_unique<batch_norm>(channels, height, width);
}
inline std::unique_ptr<module> embedding(int64_t vocab, int64_t dim) {
  return std::make_unique<nn::embedding>(vocab, dim);
}

} // namespace dtrain::nn::build
