// A plugin whose training operator is a libtorch model: "libtorch_cnn", a
// small CNN (torch::nn) classifying Fashion-MNIST, trained by dtrain
// through the libtorch adapter (dtrain/libtorch/operator.hpp). Built out of
// tree against an installed dtrain (see README.md).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <torch/torch.h>

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"
#include "dtrain/libtorch/operator.hpp"
#include "dtrain/plugin/plugin.hpp"

namespace {

using dtrain::result;
using dtrain::status;

/// The network: two 3x3 convolutions with ReLU and 2x2 max pooling, then
/// two fully connected layers. Input [batch, 1, 28, 28], output the ten
/// classes' logits.
struct fashion_cnn_impl : torch::nn::Module {
  fashion_cnn_impl()
    : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)))),
      conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)))),
      fc1(register_module("fc1", torch::nn::Linear(64 * 5 * 5, 128))),
      fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}

  at::Tensor forward(at::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);  // 32 x 13 x 13
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 64 x 5 x 5
    return fc2(torch::relu(fc1(x.flatten(1))));
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE_IMPL(fashion_cnn, fashion_cnn_impl);  // a holder of a shared_ptr

/// The first `limit` samples of another dataset (for quick runs). Immutable,
/// so gather() is as thread-safe as the base's.
class first_samples final : public dtrain::data::dataset {
public:
  first_samples(std::shared_ptr<const dtrain::data::dataset> base, int64_t limit)
    : base_(std::move(base)), size_(std::min(limit, base_->size())) {}

  int64_t size() const override { return size_; }
  int64_t feature_count() const override { return base_->feature_count(); }
  int64_t target_count() const override { return base_->target_count(); }
  std::string name() const override {
    return base_->name() + ", first " + std::to_string(size_);
  }
  dtrain::status gather(const int64_t* indices, int64_t n, float* features,
                        float* targets) const override {
    return base_->gather(indices, n, features, targets);  // indices < size_ <= the base's
  }

private:
  std::shared_ptr<const dtrain::data::dataset> base_;
  int64_t size_;
};

struct fashion_mnist_splits {
  std::shared_ptr<const dtrain::data::dataset> train, test;
};

// Fashion-MNIST of `dir`, loaded once per process and directory: replicas
// that are threads of one process (an embedded cluster, a node with
// several slots) share one copy (about 220 MB). The lock is held while
// loading so that concurrent first calls wait for one load; a failed load
// is not kept.
result<fashion_mnist_splits> shared_fashion_mnist(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, fashion_mnist_splits> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(dir);
  if (it != cache.end())
    return it->second;
  namespace data = dtrain::data;
  DTRAIN_ASSIGN_OR_RETURN(auto train, data::load_fashion_mnist(dir, data::split::train));
  DTRAIN_ASSIGN_OR_RETURN(auto test, data::load_fashion_mnist(dir, data::split::test));
  fashion_mnist_splits splits{std::move(train), std::move(test)};
  cache.emplace(dir, splits);
  return splits;
}

std::shared_ptr<const dtrain::data::dataset> limited(
    std::shared_ptr<const dtrain::data::dataset> set, int64_t limit) {
  if (limit <= 0 || limit >= set->size())
    return set;
  return std::make_shared<first_samples>(std::move(set), limit);
}

/// The operator. Hyperparameters: lr (0.01), optimizer (sgd, with momentum
/// `momentum`, 0.9; or adam: libtorch's own optimizers), data_dir
/// (data::default_fashion_mnist_dir()), train_samples and
/// validation_samples (0: the whole split; a limit makes quick runs).
/// Every replica builds the same module (the adapter seeds libtorch with
/// the trainer's seed); dtrain shards the data, syncs the gradients and
/// steps the optimizer.
class libtorch_cnn final : public dtrain::libtorch::torch_operator {
public:
  status build(const dtrain::train::hyperparameters& hp, dtrain::train::replica_context& ctx,
               dtrain::libtorch::torch_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"lr", "optimizer", "momentum", "data_dir",
                                           "train_samples", "validation_samples"},
                                          "operator 'libtorch_cnn'"));
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.01));
    DTRAIN_ASSIGN_OR_RETURN(std::string optimizer, hp.get_string("optimizer", "sgd"));
    DTRAIN_ASSIGN_OR_RETURN(double momentum, hp.get_double("momentum", 0.9));
    DTRAIN_ASSIGN_OR_RETURN(std::string dir, hp.get_string("data_dir",
                                                           dtrain::data::default_fashion_mnist_dir()));
    DTRAIN_ASSIGN_OR_RETURN(int64_t train_samples, hp.get_int("train_samples", 0));
    DTRAIN_ASSIGN_OR_RETURN(int64_t validation_samples, hp.get_int("validation_samples", 0));
    if (!(lr > 0) || !(momentum >= 0 && momentum < 1))
      return dtrain::invalid_argument(
          "operator 'libtorch_cnn': lr > 0 and momentum in [0, 1) are needed");
    if (train_samples < 0 || validation_samples < 0)
      return dtrain::invalid_argument(
          "operator 'libtorch_cnn': train_samples and validation_samples must be >= 0");

    fashion_cnn net;
    if (optimizer == "sgd")
      parts.torch_optimizer = std::make_unique<torch::optim::SGD>(
          net->parameters(), torch::optim::SGDOptions(lr).momentum(momentum));
    else if (optimizer == "adam")
      parts.torch_optimizer = std::make_unique<torch::optim::Adam>(
          net->parameters(), torch::optim::AdamOptions(lr));
    else
      return dtrain::invalid_argument("operator 'libtorch_cnn': optimizer '" + optimizer +
                                      "' is not sgd or adam");
    parts.module = torch::nn::AnyModule(net);
    parts.input_shape = {1, 28, 28};
    parts.torch_loss = [](const at::Tensor& logits, const at::Tensor& labels) {
      return torch::nn::functional::cross_entropy(logits, labels);
    };
    parts.classification = true;

    DTRAIN_ASSIGN_OR_RETURN(auto splits, shared_fashion_mnist(dir));
    parts.train_data = limited(splits.train, train_samples);
    parts.validation_data = limited(splits.test, validation_samples);
    return status::ok();
  }
};

} // namespace

DTRAIN_PLUGIN(registrar) {
  registrar.add_operator("libtorch_cnn", [] { return std::make_unique<libtorch_cnn>(); });
}
