// A user's plugin with a libtorch model, as the fault tolerance suite
// trains it on node processes: "torch_fashion_mlp", a libtorch MLP
// 784-hidden-10 (ReLU) on Fashion-MNIST with libtorch's SGD (momentum 0.9)
// and libtorch's cross-entropy, through dtrain's libtorch adapter.
// Hyperparameters: hidden (128), lr (0.05), data_dir.
#include <torch/torch.h>

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"
#include "dtrain/libtorch/operator.hpp"
#include "dtrain/plugin/plugin.hpp"

namespace {

struct fashion_mlp_impl : torch::nn::Module {
  explicit fashion_mlp_impl(int64_t hidden)
    : fc1(register_module("fc1", torch::nn::Linear(784, hidden))),
      fc2(register_module("fc2", torch::nn::Linear(hidden, 10))) {}
  at::Tensor forward(at::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE_IMPL(fashion_mlp, fashion_mlp_impl);

class torch_fashion_mlp final : public dtrain::libtorch::torch_operator {
public:
  dtrain::status build(const dtrain::train::hyperparameters& hp, dtrain::train::replica_context&,
                       dtrain::libtorch::torch_parts& parts) override {
    using namespace dtrain;
    DTRAIN_RETURN_IF_ERROR(
        hp.check_known({"hidden", "lr", "data_dir"}, "operator 'torch_fashion_mlp'"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t hidden, hp.get_int("hidden", 128));
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.05));
    DTRAIN_ASSIGN_OR_RETURN(std::string dir,
                            hp.get_string("data_dir", data::default_fashion_mnist_dir()));
    fashion_mlp net(hidden);
    parts.torch_optimizer = std::make_unique<torch::optim::SGD>(
        net->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
    parts.module = torch::nn::AnyModule(net);
    parts.input_shape = {784};
    parts.torch_loss = [](const at::Tensor& out, const at::Tensor& target) {
      return torch::nn::functional::cross_entropy(out, target);
    };
    DTRAIN_ASSIGN_OR_RETURN(parts.train_data, data::load_fashion_mnist(dir, data::split::train));
    DTRAIN_ASSIGN_OR_RETURN(parts.validation_data,
                            data::load_fashion_mnist(dir, data::split::test));
    return status::ok();
  }
};

} // namespace

DTRAIN_PLUGIN(registrar) {
  registrar.add_operator("torch_fashion_mlp", [] {
    return std::unique_ptr<dtrain::train::training_operator>(
        std::make_unique<torch_fashion_mlp>());
  });
}
