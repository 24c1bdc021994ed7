#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dtrain/nn/conv.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/pooling.hpp"

namespace dtrain::nn {

/// Declares a convolutional network in a few lines, keeping track of the
/// activations' shape so that no layer needs its input size spelled out:
///
///   auto net = cnn_builder({1, 28, 28})
///                  .conv2d(32, 5, 1, 2).relu().max_pool2d(2)
///                  .conv2d(64, 5, 1, 2).relu().max_pool2d(2)
///                  .linear(128).relu().linear(10)
///                  .build();   // result<unique_ptr<sequential>>
///
/// Activations are NCHW images (see image_shape) until the first linear
/// layer, which flattens them implicitly; a conv or pool after that is an
/// error. The first layer that does not fit (its options, or an image that
/// has become too small) is remembered and returned by build(), naming the
/// layer and its position; later calls are then ignored. Not thread-safe.
class cnn_builder {
public:
  explicit cnn_builder(image_shape input);

  cnn_builder& conv2d(int64_t out_channels, const conv2d_options& options);
  /// A square kernel; padding kernel / 2 keeps the size for odd kernels.
  cnn_builder& conv2d(int64_t out_channels, int64_t kernel, int64_t stride = 1,
                      int64_t padding = 0);
  cnn_builder& max_pool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  cnn_builder& avg_pool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  cnn_builder& global_avg_pool();
  cnn_builder& activation(ops::activation kind);
  cnn_builder& relu() { return activation(ops::activation::relu); }
  cnn_builder& dropout(float p);
  cnn_builder& linear(int64_t out_features);

  /// The current activations' feature count, and their image shape while
  /// they are still an image.
  int64_t features() const { return features_; }
  image_shape shape() const { return shape_; }

  /// The network, or the first error; the builder is empty afterwards.
  result<std::unique_ptr<sequential>> build();

private:
  // Appends `layer` when nothing failed yet, checking that it takes the
  // current features and updating them.
  void append(std::unique_ptr<module> layer);
  // Appends an image layer (conv, pool), whose output shape it then adopts.
  template <typename Layer>
  void append_image(std::unique_ptr<Layer> layer);

  image_shape shape_;
  int64_t features_;
  bool flat_ = false;
  std::unique_ptr<sequential> net_;
  status error_;
};

/// A plain CNN for small images: for each entry of `conv`, a conv2d with
/// that many output channels (square kernel, stride 1, padding kernel / 2),
/// the activation, and a max pool of `pool` (none when 1); then, as
/// make_mlp, linear layers of `hidden` widths with the activation (and
/// dropout when > 0), and a linear layer to `outputs`. The defaults are a
/// Fashion-MNIST classifier: 1x28x28 -> 32 -> 64 channels, 5x5 kernels,
/// 2x2 pools, a dense head of 128.
struct cnn_spec {
  image_shape input{1, 28, 28};
  std::vector<int64_t> conv{32, 64};
  int64_t kernel = 5;
  int64_t pool = 2;
  std::vector<int64_t> hidden{128};
  int64_t outputs = 10;
  ops::activation act = ops::activation::relu;
  float dropout = 0.0f;
};
/// The network of `spec`, or the error of the first layer that does not fit
/// (e.g. too many pools for the image).
result<std::unique_ptr<sequential>> make_cnn(const cnn_spec& spec);

} // namespace dtrain::nn
