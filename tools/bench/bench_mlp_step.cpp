// Benchmark: one training step of an MLP 784-1024-1024-10 (ReLU), batch 256,
// SGD, in one process, side by side with PyTorch's single-process rows of
// ../shared/peers/torch_ddp_mlp.py, run in the same invocation and
// interleaved, at the same thread budgets. Also the achieved GFLOP/s against
// OpenBLAS's sgemm peak measured in the same run.
//
//   build/bin/dtrain-bench-step [--repeats 3] [--steps 30] [--peer PATH]
//
// Prints a table and a final summary line; medians of medians.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "bench_step.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/nn/model.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/tensor/ops.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;

using dtrain::bench::median;

namespace {

constexpr int64_t batch = 256;
const std::vector<int64_t> widths{784, 1024, 1024, 10};

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// Forward GEMMs, every weight gradient, and the input gradients of all
// layers but the first (which, like torch, dtrain skips).
double step_flops() {
  double fwd = 0, dx = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    double f = 2.0 * batch * widths[i] * widths[i + 1];
    fwd += f;
    if (i > 0)
      dx += f;
  }
  return 2 * fwd + dx;
}

double dtrain_step_ms(int steps) {
  nn::mlp_spec spec{784, {1024, 1024}, 10, ops::activation::relu, 0.0f};
  auto m = nn::model::create(nn::make_mlp(spec), {784, device::cpu(), 0}).value();
  return bench::sgd_step_ms(*m, batch, steps);
}

double sgemm_peak_gflops() {
  auto a = tensor::full({batch, 1024}, 0.5f), b = tensor::full({1024, 1024}, 0.25f);
  auto c = tensor::empty({batch, 1024});
  std::vector<double> times;
  for (int i = 0; i < 23; ++i) {
    auto start = clock_type::now();
    ops::matmul(a, false, b, false, c);
    if (i >= 3)
      times.push_back(ms_since(start));
  }
  return 2.0 * batch * 1024 * 1024 / (median(times) * 1e6);
}

// torch's single-process step time per "torch/OpenBLAS" thread setting.
std::map<std::string, double> run_peer(const std::string& script, int steps) {
  std::map<std::string, double> out;
  std::regex row(R"(torch threads=(\d+) OpenBLAS threads=(\d+): step ([0-9.]+) ms)");
  dtrain::bench::for_each_output_line(
      "/usr/bin/python3 " + script + " --nprocs 1 --steps " + std::to_string(steps),
      [&](const char* line) {
        std::cmatch m;
        if (std::regex_search(line, m, row))
          out[m[1].str() + "/" + m[2].str()] = std::stod(m[3].str());
      });
  return out;
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3, steps = 30;
  std::string peer = DTRAIN_PEERS_DIR "/torch_ddp_mlp.py";
  CLI::App app{"dtrain vs PyTorch: one MLP training step"};
  app.add_option("--repeats", repeats, "interleaved repetitions")->capture_default_str();
  app.add_option("--steps", steps, "timed steps per repetition")->capture_default_str();
  app.add_option("--peer", peer, "torch_ddp_mlp.py")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf("MLP 784-1024-1024-10, batch %lld, SGD; %.3f GFLOP per step; %d repeats x %d "
              "steps\n", static_cast<long long>(batch), step_flops() / 1e9, repeats, steps);
  std::map<int, std::vector<double>> ours, peak;
  std::map<std::string, std::vector<double>> theirs;
  for (int r = 0; r < repeats; ++r) {
    for (int threads : {1, 2}) {
      set_blas_threads(threads);
      peak[threads].push_back(sgemm_peak_gflops());
      ours[threads].push_back(dtrain_step_ms(steps));
    }
    for (auto& [key, ms] : run_peer(peer, steps))
      theirs[key].push_back(ms);
  }
  if (theirs.empty())
    std::printf("(peer unavailable: install it with tools/install-deps.sh --peers)\n");

  std::printf("\n%-8s %12s %14s %12s %16s %9s %10s %9s\n", "threads", "dtrain ms",
              "dtrain GFLOP/s", "sgemm peak", "torch ms (t/b)", "torch/dt", "dtrain s/s",
              "% of peak");
  double worst_ratio = 1e9;
  for (int threads : {1, 2}) {
    double ms = median(ours[threads]), pk = median(peak[threads]);
    double gflops = step_flops() / (ms * 1e6);
    std::string key = threads == 1 ? "1/1" : "1/2";  // torch's best setting per budget
    double torch_ms = theirs.count(key) ? median(theirs[key]) : 0;
    double ratio = torch_ms > 0 ? torch_ms / ms : 0;
    if (torch_ms > 0)
      worst_ratio = std::min(worst_ratio, ratio);
    std::printf("%-8d %12.2f %14.1f %12.1f %11.2f (%s) %9.2f %10.0f %8.0f%%\n", threads, ms,
                gflops, pk, torch_ms, key.c_str(), ratio, batch / ms * 1e3, 100 * gflops / pk);
  }
  if (theirs.count("2/2"))
    std::printf("(torch with 2 intra-op + 2 OpenBLAS threads: %.2f ms)\n",
                median(theirs["2/2"]));
  if (worst_ratio < 1e9)
    std::printf("\nsummary: dtrain step is %.2fx PyTorch's speed at its worst thread budget "
                "(goal >= 1.00)\n", worst_ratio);
  return 0;
}
