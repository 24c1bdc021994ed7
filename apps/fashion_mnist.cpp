// Trains an MLP classifier on Fashion-MNIST in one process and prints, per
// epoch, the training loss and accuracy, the test loss and accuracy, the
// time and the throughput; then the final test accuracy.
//
//   build/bin/dtrain-fashion-mnist                       # 784-256-128-100-10, Adam, 15 epochs
//   build/bin/dtrain-fashion-mnist --epochs 3 --hidden 512,256 --optimizer sgd
//     --lr 0.05 --momentum 0.9 --schedule cosine --device cuda
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "dtrain/core/threads.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "dtrain/train/fashion_mnist.hpp"

namespace {

void print_epoch(const dtrain::train::epoch_report& r) {
  std::printf("epoch %3lld  lr %.5f  train loss %.4f acc %.4f  test loss %.4f acc %.4f  "
              "%.2f s  %.0f samples/s\n",
              static_cast<long long>(r.epoch), static_cast<double>(r.lr), r.train.mean_loss(),
              r.train.accuracy(), r.test.mean_loss(), r.test.accuracy(), r.train.seconds,
              r.train.samples_per_second());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  dtrain::train::classifier_run_options o;
  std::string activation = "relu", device = "cpu";
  int threads = 0;
  CLI::App app{"Train an MLP on Fashion-MNIST in one process"};
  app.add_option("--epochs", o.epochs, "epochs")->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "samples per step")->capture_default_str();
  app.add_option("--hidden", o.model.hidden, "hidden layer widths, e.g. 256,128,100")
    ->delimiter(',')->capture_default_str();
  app.add_option("--activation", activation, "relu, gelu or tanh")->capture_default_str();
  app.add_option("--dropout", o.model.dropout, "dropout after each hidden layer")
    ->capture_default_str();
  app.add_option("--optimizer", o.optimizer.name, "sgd, adam or adamw")->capture_default_str();
  app.add_option("--lr", o.optimizer.lr, "base learning rate")->capture_default_str();
  app.add_option("--momentum", o.optimizer.momentum, "SGD momentum")->capture_default_str();
  app.add_flag("--nesterov", o.optimizer.nesterov, "Nesterov momentum (SGD)");
  app.add_option("--weight-decay", o.optimizer.weight_decay, "weight decay")
    ->capture_default_str();
  app.add_option("--schedule", o.schedule.name, "constant, step, multistep or cosine")
    ->capture_default_str();
  app.add_option("--milestones", o.schedule.milestones, "multistep epochs")->delimiter(',');
  app.add_option("--gamma", o.schedule.gamma, "step/multistep decay")->capture_default_str();
  app.add_option("--step-size", o.schedule.step_size, "step schedule period")
    ->capture_default_str();
  app.add_option("--warmup", o.schedule.warmup, "linear warm-up epochs")->capture_default_str();
  app.add_option("--seed", o.seed, "seed for initialization, shuffling, dropout")
    ->capture_default_str();
  app.add_option("--data-dir", o.data_dir, "Fashion-MNIST directory (default: "
                 "$DTRAIN_FASHION_MNIST or /usr/share/datasets/fashion-mnist)");
  app.add_option("--device", device, "cpu or cuda")->capture_default_str();
  app.add_option("--threads", threads, "OpenBLAS threads (default: all cores)");
  std::string precision_name = "fp32";
  app.add_option("--precision", precision_name,
                 "GEMM compute: fp32, tf32, bf16 or fp16 (fp16 with loss scaling; on the CPU "
                 "an emulation, slower than fp32)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto compute = dtrain::parse_precision(precision_name);
  if (!compute) {
    std::fprintf(stderr, "error: --precision: %s\n", compute.error().message().c_str());
    return 2;
  }
  o.compute = *compute;

  auto act = dtrain::nn::parse_activation(activation);
  if (!act) {
    std::fprintf(stderr, "error: --activation: %s\n", act.error().message().c_str());
    return 2;
  }
  o.model.act = *act;
  if (device == "cuda") {
    if (!dtrain::cuda::available()) {
      std::fprintf(stderr, "error: --device cuda: %s\n",
                   dtrain::cuda::unavailable_reason().c_str());
      return 2;
    }
    o.where = dtrain::device::cuda(0);
  } else if (device != "cpu") {
    std::fprintf(stderr, "error: --device must be cpu or cuda, got '%s'\n", device.c_str());
    return 2;
  }
  if (threads > 0)
    dtrain::set_blas_threads(threads);

  std::printf("Fashion-MNIST MLP 784-");
  for (auto h : o.model.hidden)
    std::printf("%lld-", static_cast<long long>(h));
  std::printf("10 (%s), %s lr %g, batch %lld, %lld epochs, %s, %s compute\n",
              activation.c_str(), o.optimizer.name.c_str(), static_cast<double>(o.optimizer.lr),
              static_cast<long long>(o.batch_size), static_cast<long long>(o.epochs),
              o.where.to_string().c_str(), dtrain::to_string(o.compute));
  auto last = dtrain::train::run_fashion_mnist(o, print_epoch);
  if (!last) {
    std::fprintf(stderr, "error: %s\n", last.error().to_string().c_str());
    return 1;
  }
  std::printf("test accuracy: %.4f (%lld images)\n", last->test.accuracy(),
              static_cast<long long>(last->test.samples));
  return 0;
}
