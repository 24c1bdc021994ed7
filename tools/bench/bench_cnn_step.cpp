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
//                                   [--device cpu|cuda] [--precision fp32|tf32|bf16|fp16]
//
// --device cuda (a CUDA build on a GPU machine) times one step on cuda:0
// against the same model in torch on the same GPU, both at --precision:
// dtrain's linear GEMMs in that compute mode (tensor/precision.hpp; fp16
// with its loss scaling in the timed step; conv2d's GEMMs stay float32
// until conv is wired to gemm_ex), torch under
// torch.autocast (bf16, fp16 with GradScaler) or with TF32 allowed. The
// thread budgets do not apply there: one row. On the CPU, --precision other
// than fp32 times dtrain's emulation, which is a correctness reference and
// slower than fp32 by design.
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
#include "dtrain/cuda/runtime.hpp"
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

std::unique_ptr<nn::model> make_model(device where, precision p) {
  auto net = nn::cnn_builder({1, 28, 28})
                 .conv2d(32, 3, 1, 1).relu().max_pool2d(2)
                 .conv2d(64, 3, 1, 1).relu().max_pool2d(2)
                 .linear(128).relu().linear(10)
                 .build();
  if (!net.is_ok()) {
    std::fprintf(stderr, "cnn_builder: %s\n", net.error().to_string().c_str());
    std::exit(1);
  }
  nn::model_options mo{784, where, 0};
  mo.compute = p;
  auto m = nn::model::create(std::move(net).value(), mo);
  if (!m.is_ok()) {
    std::fprintf(stderr, "model on %s: %s\n", where.to_string().c_str(),
                 m.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(m).value();
}

double dtrain_step_ms(int steps, device where, precision p) {
  auto m = make_model(where, p);
  return bench::sgd_step_ms(*m, batch, steps);
}

// torch's step time per "torch/OpenBLAS" thread setting; the version line
// goes to `version`.
std::map<std::string, double> run_peer(const std::string& script, int steps,
                                       const std::string& extra_args, std::string& version,
                                       const std::string& python = "/usr/bin/python3") {
  std::map<std::string, double> out;
  std::regex row(R"(torch threads=(\d+) OpenBLAS threads=(\d+): step ([0-9.]+) ms)");
  dtrain::bench::for_each_output_line(
      python + " " + script + " --steps " + std::to_string(steps) + extra_args,
      [&](const char* line) {
        std::cmatch m;
        if (std::regex_search(line, m, row))
          out[m[1].str() + "/" + m[2].str()] = std::stod(m[3].str());
        else if (std::string(line).rfind("torch ", 0) == 0)
          version = std::string(line, std::strcspn(line, "\n"));
      });
  return out;
}

// --device cuda: one row, dtrain and torch on the same GPU at `p`.
int run_on_cuda(const std::string& peer, int repeats, int steps, precision p) {
  if (!cuda::available()) {
    std::fprintf(stderr, "--device cuda: no CUDA device (or a CPU-only build)\n");
    return 1;
  }
  std::printf("device: cuda:0 %s, precision %s\n", cuda::device_name(0).c_str(), to_string(p));
  std::vector<double> ours, theirs;
  std::string version;
  for (int r = 0; r < repeats; ++r) {
    ours.push_back(dtrain_step_ms(steps, device::cuda(), p));
    auto peer_ms = run_peer(peer, steps,
                            std::string(" --device cuda --precision ") + to_string(p) +
                                " --configs 1/1",
                            version, "python3");  // the GPU machine's torch is on PATH
    if (peer_ms.count("1/1"))
      theirs.push_back(peer_ms["1/1"]);
  }
  if (!version.empty())
    std::printf("peer: %s\n", version.c_str());
  const double ms = median(ours), torch_ms = median(theirs);
  std::printf("\n%-10s %10s %14s %10s %14s %9s\n", "precision", "dtrain ms", "dtrain GFLOP/s",
              "torch ms", "torch GFLOP/s", "torch/dt");
  std::printf("%-10s %10.3f %14.1f %10.3f %14.1f %9.2f\n", to_string(p), ms,
              step_flops() / (ms * 1e6), torch_ms,
              torch_ms > 0 ? step_flops() / (torch_ms * 1e6) : 0.0,
              torch_ms > 0 ? torch_ms / ms : 0.0);
  if (torch_ms > 0)
    std::printf("\nsummary: on %s at %s, dtrain's step is %.2fx PyTorch's speed\n",
                cuda::device_name(0).c_str(), to_string(p), torch_ms / ms);
  else
    std::printf("(peer unavailable: python3 with torch on CUDA is needed)\n");
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3, steps = 30;
  std::string peer = DTRAIN_SOURCE_DIR "/tools/peer/torch_cnn_step.py";
  CLI::App app{"dtrain vs PyTorch: one CNN training step"};
  app.add_option("--repeats", repeats, "interleaved repetitions")->capture_default_str();
  app.add_option("--steps", steps, "timed steps per repetition")->capture_default_str();
  app.add_option("--peer", peer, "torch_cnn_step.py")->capture_default_str();
  std::string device_name = "cpu", precision_name = "fp32";
  app.add_option("--device", device_name, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--precision", precision_name, "GEMM compute: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto compute = parse_precision(precision_name);
  if (!compute.is_ok()) {
    std::fprintf(stderr, "--precision: %s\n", compute.error().message().c_str());
    return 2;
  }
  if (device_name == "cuda")
    return run_on_cuda(peer, repeats, steps, *compute);

  std::printf("CNN 1x28x28 -> conv3x3(32) relu pool2 -> conv3x3(64) relu pool2 -> 3136-128 "
              "relu -> 10, batch %lld, SGD\n%.3f GFLOP per step (conv + linear: 2 x MACs "
              "forward, x3 for forward + backward, approximate); %d repeats x %d steps\n",
              static_cast<long long>(batch), step_flops() / 1e9, repeats, steps);
  if (*compute != precision::fp32)
    std::printf("dtrain at %s on the CPU: the emulation (a reference, not a fast path); "
                "torch in float32\n", to_string(*compute));
  std::map<int, std::vector<double>> ours;
  std::map<std::string, std::vector<double>> theirs;
  std::string version;
  for (int r = 0; r < repeats; ++r) {
    for (int threads : {1, 2}) {
      set_blas_threads(threads);
      ours[threads].push_back(dtrain_step_ms(steps, device::cpu(), *compute));
    }
    for (auto& [key, ms] : run_peer(peer, steps, " --configs 1/1 2/1 1/2 2/2", version))
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
