// Benchmark: the trainer end to end on an embedded cluster.
//  1. Data-parallel throughput of the MLP 784-1024-1024-10, batch 256 per
//     replica, N = 2 replicas, SGD, OpenBLAS 1 thread per replica, side by
//     side with ../shared/peers/torch_ddp_mlp.py N = 2 (1 + 1 threads per
//     rank) run by this program. dtrain trains on Fashion-MNIST (real data
//     through its loader); the peer repeats one synthetic batch.
//  2. The framework's own cost: time per step of the `noop` operator (a
//     one-parameter model), 1 and 2 replicas.
//  3. Time from driver start to the replicas being ready for the first
//     step, 2 local replicas.
//
//   build/bin/dtrain-bench-trainer [--repeats 3] [--peer PATH]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/actors/trainer.hpp"
#include "dtrain/core/threads.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;

using dtrain::bench::median;

namespace {

actors::trainer_config mlp(int replicas) {
  actors::trainer_config t;
  t.name = "bench-mlp";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "1024,1024"}, {"optimizer", "sgd"}, {"lr", "0.01"}, {"schedule", "constant"}};
  t.num_replicas = replicas;
  t.global_batch_size = 256 * replicas;
  return t;
}

actors::trainer_config noop(int replicas) {
  actors::trainer_config t;
  t.name = "bench-noop";
  t.operator_name = "noop";
  t.config = {{"samples", "200000"}};
  t.num_replicas = replicas;
  t.global_batch_size = replicas;  // one sample per replica per step
  return t;
}

// samples/s of the second of two epochs (the first warms caches and pools).
double mlp_throughput(actors::cluster& c) {
  auto t = actors::trainer::create(c, mlp(2));
  if (!t) {
    std::printf("mlp trainer: %s\n", t.error().to_string().c_str());
    return 0;
  }
  (void)(*t)->train();
  auto m = (*t)->train();
  return m ? m->samples_per_second : 0;
}

double noop_step_us(actors::cluster& c, int replicas) {
  auto t = actors::trainer::create(c, noop(replicas));
  if (!t) {
    std::printf("noop trainer: %s\n", t.error().to_string().c_str());
    return 0;
  }
  (void)(*t)->train();
  auto m = (*t)->train();
  return m && m->steps > 0 ? m->seconds / static_cast<double>(m->steps) * 1e6 : 0;
}

// From nothing (no actor system) to two replicas set up.
double startup_seconds() {
  auto start = clock_type::now();
  auto c = actors::cluster::connect({"", 2, 0, std::chrono::milliseconds(5000)});
  if (!c)
    return 0;
  auto t = actors::trainer::create(**c, noop(2));
  double s = std::chrono::duration<double>(clock_type::now() - start).count();
  return t ? s : 0;
}

double torch_ddp_samples_per_second(const std::string& script) {
  std::regex row(R"(^\s*2\s+\S+\s+[0-9.]+\s+[0-9.]+\s+[-0-9.]+\s+[0-9.]+\s+([0-9.]+))");
  double out = 0;
  dtrain::bench::for_each_output_line(
      "/usr/bin/python3 " + script + " --nprocs 2 --steps 30", [&](const char* line) {
        std::cmatch m;
        if (std::regex_search(line, m, row))
          out = std::stod(m[1].str());
      });
  return out;
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::string peer = DTRAIN_PEERS_DIR "/torch_ddp_mlp.py";
  CLI::App app{"dtrain trainer benchmarks"};
  app.add_option("--repeats", repeats, "interleaved repetitions (medians)")->capture_default_str();
  app.add_option("--peer", peer, "torch_ddp_mlp.py")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  set_blas_threads(1);

  std::vector<double> ours, theirs, startup, noop1, noop2;
  for (int r = 0; r < repeats; ++r) {
    startup.push_back(startup_seconds());
    {
      auto c = actors::cluster::connect({"", 2, 0, std::chrono::milliseconds(5000)}).value();
      ours.push_back(mlp_throughput(*c));
      noop1.push_back(noop_step_us(*c, 1));
      noop2.push_back(noop_step_us(*c, 2));
    }
    theirs.push_back(torch_ddp_samples_per_second(peer));
  }
  double o = median(ours), t = median(theirs);
  std::printf("medians of %d interleaved repeats\n\n", repeats);
  std::printf("%-58s %12s %12s %8s\n", "MLP 784-1024-1024-10, batch 256/replica, N=2", "dtrain", "torch DDP", "ratio");
  std::printf("%-58s %12.0f %12.0f %7.2fx\n", "  samples/s (1 OpenBLAS thread per replica)", o, t, t > 0 ? o / t : 0);
  std::printf("\nframework cost, noop operator (1 parameter, 1 sample/replica/step):\n");
  std::printf("  1 replica : %8.1f us per step\n", median(noop1));
  std::printf("  2 replicas: %8.1f us per step (includes a 4-byte all_reduce)\n", median(noop2));
  std::printf("\ndriver start to 2 local replicas ready: %.3f s\n", median(startup));
  std::printf("\nsummary: DP throughput %.2fx PyTorch DDP (goal >= 1.3); noop step %.1f us with 1 "
              "replica (goal < 20); startup %.3f s (goal < 0.5)\n",
              t > 0 ? o / t : 0, median(noop1), median(startup));
  return 0;
}
