// Benchmark: one training step of a small CNN, batch 128, SGD, on the CPU,
// side by side with the same network in PyTorch (tools/peer/torch_cnn_step.py,
// Debian's python3-torch), run in the same invocation and interleaved, at
// the same thread budgets:
//
//   1x28x28 -> conv2d 3x3 pad 1 (32) -> relu -> max_pool 2
//           -> conv2d 3x3 pad 1 (64) -> relu -> max_pool 2
//           -> linear 3136->128 -> relu -> linear 128->10
//
// A step is forward, cross-entropy loss, backward and the SGD update.
// dtrain's threads are OpenBLAS's (set_blas_threads); torch's are its
// intra-op threads and OpenBLAS's pool, and at a budget of 2 threads dtrain
// is compared with torch's fastest of 2/1, 1/2 and 2/2 (torch/OpenBLAS).
//
//   build/bin/dtrain-bench-cnn-step [--repeats 3] [--steps 30] [--peer PATH]
//
// Prints a table and a final summary line; medians of medians.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "bench_step.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/nn/cnn.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/tensor/ops.hpp"

using namespace dtrain;

using dtrain::bench::median;

namespace {

constexpr int64_t batch = 128;

// Multiply-adds of one sample's forward pass: the two convolutions
// (out channels * output pixels * in channels * 3 * 3) and the two linear
// layers. Pooling, ReLU and the loss are not counted.
double forward_macs_per_sample() {
  double conv1 = 32.0 * 28 * 28 * 1 * 3 * 3;
  double conv2 = 64.0 * 14 * 14 * 32 * 3 * 3;
  double fc1 = 3136.0 * 128, fc2 = 128.0 * 10;
  return conv1 + conv2 + fc1 + fc2;
}

// Approximate: 2 FLOPs per MAC forward, times 3 for forward + backward
// (weight and input gradients each cost about a forward; the first layer's
// input gradient, which neither framework computes, is counted anyway).
double step_flops() { return 3 * 2 * forward_macs_per_sample() * batch; }

std::unique_ptr<nn::model> make_model() {
  auto net = nn::cnn_builder({1, 28, 28})
                 .conv2d(32, 3, 1, 1).relu().max_pool2d(2)
                 .conv2d(64, 3, 1, 1).relu().max_pool2d(2)
                 .linear(128).relu().linear(10)
                 .build();
  if (!net.is_ok()) {
    std::fprintf(stderr, "cnn_builder: %s\n", net.error().to_string().c_str());
    std::exit(1);
  }
  return nn::model::create(std::move(net).value(), {784, device::cpu(), 0}).value();
}

double dtrain_step_ms(int steps) {
  auto m = make_model();
  return bench::sgd_step_ms(*m, batch, steps);
}

// torch's step time per "torch/OpenBLAS" thread setting; the version line
// goes to `version`.
std::map<std::string, double> run_peer(const std::string& script, int steps,
                                       std::string& version) {
  std::map<std::string, double> out;
  std::regex row(R"(torch threads=(\d+) OpenBLAS threads=(\d+): step ([0-9.]+) ms)");
  dtrain::bench::for_each_output_line(
      "/usr/bin/python3 " + script + " --steps " + std::to_string(steps) +
          " --configs 1/1 2/1 1/2 2/2",
      [&](const char* line) {
        std::cmatch m;
        if (std::regex_search(line, m, row))
          out[m[1].str() + "/" + m[2].str()] = std::stod(m[3].str());
        else if (std::string(line).rfind("torch ", 0) == 0)
          version = std::string(line, std::strcspn(line, "\n"));
      });
  return out;
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3, steps = 30;
  std::string peer = DTRAIN_SOURCE_DIR "/tools/peer/torch_cnn_step.py";
  CLI::App app{"dtrain vs PyTorch: one CNN training step"};
  app.add_option("--repeats", repeats, "interleaved repetitions")->capture_default_str();
  app.add_option("--steps", steps, "timed steps per repetition")->capture_default_str();
  app.add_option("--peer", peer, "torch_cnn_step.py")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf("CNN 1x28x28 -> conv3x3(32) relu pool2 -> conv3x3(64) relu pool2 -> 3136-128 "
              "relu -> 10, batch %lld, SGD\n%.3f GFLOP per step (conv + linear: 2 x MACs "
              "forward, x3 for forward + backward, approximate); %d repeats x %d steps\n",
              static_cast<long long>(batch), step_flops() / 1e9, repeats, steps);
  std::map<int, std::vector<double>> ours;
  std::map<std::string, std::vector<double>> theirs;
  std::string version;
  for (int r = 0; r < repeats; ++r) {
    for (int threads : {1, 2}) {
      set_blas_threads(threads);
      ours[threads].push_back(dtrain_step_ms(steps));
    }
    for (auto& [key, ms] : run_peer(peer, steps, version))
      theirs[key].push_back(ms);
  }
  if (theirs.empty())
    std::printf("(peer unavailable: install it with tools/install-deps.sh --peers)\n");
  else if (!version.empty())
    std::printf("peer: %s\n", version.c_str());

  std::printf("\n%-8s %10s %14s %16s %14s %9s %10s\n", "threads", "dtrain ms",
              "dtrain GFLOP/s", "torch ms (t/b)", "torch GFLOP/s", "torch/dt", "dtrain s/s");
  double worst_ratio = 1e9;
  for (int threads : {1, 2}) {
    double ms = median(ours[threads]);
    // torch's fastest setting within the budget
    std::string key;
    double torch_ms = 0;
    for (std::string k : threads == 1 ? std::vector<std::string>{"1/1"}
                                      : std::vector<std::string>{"2/1", "1/2", "2/2"})
      if (theirs.count(k) && (torch_ms == 0 || median(theirs[k]) < torch_ms)) {
        torch_ms = median(theirs[k]);
        key = k;
      }
    double ratio = torch_ms > 0 ? torch_ms / ms : 0;
    if (torch_ms > 0)
      worst_ratio = std::min(worst_ratio, ratio);
    std::printf("%-8d %10.2f %14.1f %11.2f (%s) %14.1f %9.2f %10.0f\n", threads, ms,
                step_flops() / (ms * 1e6), torch_ms, key.empty() ? "-" : key.c_str(),
                torch_ms > 0 ? step_flops() / (torch_ms * 1e6) : 0.0, ratio,
                batch / ms * 1e3);
  }
  if (!theirs.empty()) {
    std::printf("(torch, every setting, torch/OpenBLAS threads:");
    for (auto& [k, v] : theirs)
      std::printf(" %s %.2f ms;", k.c_str(), median(v));
    std::printf(")\n");
  }
  if (worst_ratio < 1e9)
    std::printf("\nsummary: dtrain step is %.2fx PyTorch's speed at its worst thread budget "
                "(goal >= 1.00)\n", worst_ratio);
  return 0;
}
