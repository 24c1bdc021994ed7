#include "support/torch_operators.hpp"

#include <mutex>

#include "dtrain/core/check.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/optim/factory.hpp"

namespace dtrain::testing {

torch_net_impl::torch_net_impl(bool batch_norm) {
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)));
  if (batch_norm)
    norm = register_module("norm", torch::nn::BatchNorm2d(4));
  fc1 = register_module("fc1", torch::nn::Linear(4 * 4 * 4, 32));
  fc2 = register_module("fc2", torch::nn::Linear(32, 5));
}

at::Tensor torch_net_impl::forward(at::Tensor x) {
  x = conv(x);
  if (norm)
    x = norm(x);
  x = torch::relu(torch::max_pool2d(x, 2)).flatten(1);
  return fc2(torch::relu(fc1(x)));
}

std::pair<at::Tensor, at::Tensor> torch_net_data(int64_t samples, uint64_t seed) {
  // Generators of their own: the data must not depend on the global seed.
  auto teacher_gen = at::detail::createCPUGenerator(99);
  at::Tensor teacher = at::normal(0.0, 1.0, {64, 5}, teacher_gen);
  auto gen = at::detail::createCPUGenerator(seed);
  at::Tensor x = at::normal(0.0, 1.0, {samples, 64}, gen);
  at::Tensor y = x.matmul(teacher).argmax(1).to(torch::kFloat32);
  return {x, y};
}

namespace {

result<std::shared_ptr<data::tensor_dataset>> dataset_of(const at::Tensor& x, const at::Tensor& y) {
  auto xs = x.contiguous(), ys = y.contiguous();
  std::vector<float> xv(xs.data_ptr<float>(), xs.data_ptr<float>() + xs.numel());
  std::vector<float> yv(ys.data_ptr<float>(), ys.data_ptr<float>() + ys.numel());
  return data::tensor_dataset::create(tensor::from_vector(xv, {x.size(0), 64}),
                                      tensor::from_vector(yv, {y.size(0)}), "synthetic 8x8");
}

class torch_net_operator final : public libtorch::torch_operator {
public:
  status build(const train::hyperparameters& hp, train::replica_context& ctx,
               libtorch::torch_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "optimizer", "loss", "batch_norm", "lr"},
                                          "operator 'torch_net'"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t samples, hp.get_int("samples", 512));
    DTRAIN_ASSIGN_OR_RETURN(std::string opt, hp.get_string("optimizer", "sgd"));
    DTRAIN_ASSIGN_OR_RETURN(std::string loss, hp.get_string("loss", "torch"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t bn, hp.get_int("batch_norm", 0));
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.05));
    torch_net net(bn != 0);
    if (opt == "sgd")
      parts.torch_optimizer = std::make_unique<torch::optim::SGD>(
          net->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
    else if (opt == "adam")
      parts.torch_optimizer = std::make_unique<torch::optim::Adam>(
          net->parameters(), torch::optim::AdamOptions(lr));
    else if (opt == "adagrad")
      parts.torch_optimizer = std::make_unique<torch::optim::Adagrad>(
          net->parameters(), torch::optim::AdagradOptions(lr).initial_accumulator_value(0.1));
    else if (opt == "rmsprop")
      parts.torch_optimizer = std::make_unique<torch::optim::RMSprop>(
          net->parameters(), torch::optim::RMSpropOptions(lr).momentum(0.5).centered(true));
    else if (opt == "dtrain_adam") {
      optim::optimizer_spec spec;
      spec.name = "adam";
      spec.lr = static_cast<float>(lr);
      DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer(spec));
    } else {
      return invalid_argument("operator 'torch_net': optimizer must be sgd, adam, adagrad, rmsprop or dtrain_adam");
    }
    if (loss == "torch")
      parts.torch_loss = [](const at::Tensor& out, const at::Tensor& target) {
        return torch::nn::functional::cross_entropy(out, target);
      };
    else if (loss != "dtrain")
      return invalid_argument("operator 'torch_net': loss must be torch or dtrain");
    parts.module = torch::nn::AnyModule(net);
    parts.input_shape = {1, 8, 8};
    auto [x, y] = torch_net_data(samples);
    DTRAIN_ASSIGN_OR_RETURN(parts.train_data, dataset_of(x, y));
    auto [vx, vy] = torch_net_data(128, 4321);
    DTRAIN_ASSIGN_OR_RETURN(parts.validation_data, dataset_of(vx, vy));
    parts.schedule = optim::constant_lr(static_cast<float>(lr));
    return status::ok();
  }
};

} // namespace

void register_torch_operators() {
  static std::once_flag once;
  std::call_once(once, [] {
    train::register_operator("torch_net", [] { return std::make_unique<torch_net_operator>(); });
  });
}

} // namespace dtrain::testing
