// Benchmark: the trainer end to end.
//  1. Data-parallel throughput of the MLP 784-1024-1024-10, batch 256 per
//     replica, N = 2 replicas, SGD, OpenBLAS 1 thread per replica, on an
//     embedded cluster and on a head + 2 node processes on loopback (`dtrain
//     start`, as users run it; each replica's threads are its share of the
//     host), side by side with ../shared/peers/torch_ddp_mlp.py N = 2 (1 + 1
//     threads per rank) run by this program. dtrain trains on Fashion-MNIST
//     (real data through its loader); the peer repeats one synthetic batch.
//  2. The framework's own cost: time per step of the `noop` operator (a
//     one-parameter model), 1 and 2 replicas.
//  3. Time from driver start to the replicas being ready for the first
//     step, 2 local replicas.
//
//  4. With --scaling (instead of 1-3): samples/s for N = 1, 2, 4 replicas,
//     embedded (threads) and node processes, against DDP N = 1, 2, 4, with
//     each one's scaling efficiency S(N) / (N x S(1)).
//
//   build/bin/dtrain-bench-trainer [--repeats 3] [--peer PATH] [--scaling | --embedded-only]
#include <CLI/CLI.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "local_nodes.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/core/threads.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;

using dtrain::bench::median;

namespace {

int64_t bucket_bytes = 0;  // --bucket-mb; 0: the trainer's default

actors::trainer_config mlp(int replicas = 2) {
  actors::trainer_config t;
  t.bucket_bytes = bucket_bytes;
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

// Where a data-parallel step's time goes, from the chief's epoch metrics:
// the whole step, the all-reduce waits not hidden behind backward, and the
// rest (compute and the framework's own passes).
struct step_breakdown {
  double step_ms = 0, exposed_allreduce_ms = 0;
};

// samples/s of the second of two epochs (the first warms caches and pools).
double mlp_throughput(actors::cluster& c, step_breakdown* where = nullptr, int replicas = 2) {
  auto t = actors::trainer::create(c, mlp(replicas));
  if (!t) {
    std::printf("mlp trainer: %s\n", t.error().to_string().c_str());
    return 0;
  }
  (void)(*t)->train();
  auto m = (*t)->train();
  if (m && where != nullptr && m->steps > 0) {
    where->step_ms = m->seconds / static_cast<double>(m->steps) * 1e3;
    where->exposed_allreduce_ms = m->allreduce_seconds / static_cast<double>(m->steps) * 1e3;
  }
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

// The MLP's throughput with `replicas` replicas on a head + as many node
// processes; 0 if they did not start.
double node_process_throughput(int replicas = 2) {
  bench::local_nodes nodes("dtrain-bench-trainer", replicas);
  if (!nodes.started().is_ok()) {
    std::printf("%s\n", nodes.started().to_string().c_str());
    return 0;
  }
  auto c = actors::cluster::connect({nodes.address(), 0, 0, std::chrono::milliseconds(10000)});
  if (!c) {
    std::printf("connecting to the node processes: %s\n", c.error().to_string().c_str());
    return 0;
  }
  return mlp_throughput(**c, nullptr, replicas);
}

// The same with `replicas` replicas on an embedded cluster of as many slots.
double embedded_throughput(int replicas) {
  auto c = actors::cluster::connect({"", replicas, 0, std::chrono::milliseconds(5000)});
  return c ? mlp_throughput(**c, nullptr, replicas) : 0;
}

// DDP's samples/s for each N of `worlds`, one run of the peer (N -> samples/s).
std::map<int, double> torch_ddp_scaling(const std::string& script, const std::vector<int>& worlds) {
  std::map<int, double> out;
  for (const auto& [n, row] : dtrain::bench::run_torch_ddp_mlp(script, worlds, 30).rows)
    out[n] = row.samples_per_second;
  return out;
}

// Samples/s for N = 1, 2, 4 replicas on this host, threads (embedded) and
// processes, against DDP, with each one's efficiency: S(N) / (N x S(1)).
void scaling(int repeats, const std::string& peer) {
  const std::vector<int> worlds{1, 2, 4};
  std::map<int, std::vector<double>> threads, processes, ddp;
  for (int r = 0; r < repeats; ++r) {
    for (int n : worlds) {
      threads[n].push_back(embedded_throughput(n));
      processes[n].push_back(node_process_throughput(n));
    }
    for (auto& [n, s] : torch_ddp_scaling(peer, worlds))
      ddp[n].push_back(s);
  }
  std::printf("scaling, MLP 784-1024-1024-10, batch 256/replica, %u cores, medians of %d "
              "interleaved repeats\n",
              std::thread::hardware_concurrency(), repeats);
  std::printf("%3s %14s %6s %14s %6s %14s %6s\n", "N", "dtrain threads", "eff", "dtrain procs",
              "eff", "torch DDP", "eff");
  const double t1 = median(threads[1]), p1 = median(processes[1]), d1 = median(ddp[1]);
  auto eff = [](double s, double one, int n) { return one > 0 ? s / (one * n) : 0; };
  for (int n : worlds) {
    const double t = median(threads[n]), p = median(processes[n]), d = median(ddp[n]);
    std::printf("%3d %14.0f %6.2f %14.0f %6.2f %14.0f %6.2f\n", n, t, eff(t, t1, n), p,
                eff(p, p1, n), d, eff(d, d1, n));
  }
}

double torch_ddp_samples_per_second(const std::string& script) {
  return torch_ddp_scaling(script, {2})[2];
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::string peer = DTRAIN_PEERS_DIR "/torch_ddp_mlp.py";
  CLI::App app{"dtrain trainer benchmarks"};
  app.add_option("--repeats", repeats, "interleaved repetitions (medians)")->capture_default_str();
  app.add_option("--peer", peer, "torch_ddp_mlp.py")->capture_default_str();
  bool scale = false;
  app.add_flag("--scaling", scale, "only the scaling curve: N = 1, 2, 4 replicas against DDP");
  bool embedded_only = false;
  app.add_flag("--embedded-only", embedded_only,
               "only the embedded N = 2 figure and its step breakdown, no peer (quick A/B runs)");
  std::vector<double> bucket_mb;
  app.add_option("--bucket-mb", bucket_mb,
                 "with --embedded-only: gradient sync bucket sizes to compare, interleaved "
                 "(0: the default)");
  CLI11_PARSE(app, argc, argv);
  set_blas_threads(1);
  if (scale) {
    scaling(repeats, peer);
    return 0;
  }
  if (embedded_only) {
    if (bucket_mb.empty())
      bucket_mb.push_back(0);
    std::map<double, std::vector<double>> rate, step, exposed;
    for (int r = 0; r < repeats; ++r)
      for (double mb : bucket_mb) {
        bucket_bytes = static_cast<int64_t>(mb * (1 << 20));
        auto c = actors::cluster::connect({"", 2, 0, std::chrono::milliseconds(5000)}).value();
        step_breakdown b;
        rate[mb].push_back(mlp_throughput(*c, &b));
        step[mb].push_back(b.step_ms);
        exposed[mb].push_back(b.exposed_allreduce_ms);
      }
    for (double mb : bucket_mb)
      std::printf("embedded N=2, buckets %s: %.0f samples/s, step %.2f ms, exposed all-reduce "
                  "%.2f ms (medians of %d)\n",
                  mb > 0 ? (std::to_string(mb) + " MiB").c_str() : "default", median(rate[mb]),
                  median(step[mb]), median(exposed[mb]), repeats);
    return 0;
  }

  std::vector<double> ours, processes, theirs, startup, noop1, noop2, step_ms, exposed_ms;
  for (int r = 0; r < repeats; ++r) {
    startup.push_back(startup_seconds());
    {
      auto c = actors::cluster::connect({"", 2, 0, std::chrono::milliseconds(5000)}).value();
      step_breakdown b;
      ours.push_back(mlp_throughput(*c, &b));
      step_ms.push_back(b.step_ms);
      exposed_ms.push_back(b.exposed_allreduce_ms);
      noop1.push_back(noop_step_us(*c, 1));
      noop2.push_back(noop_step_us(*c, 2));
    }
    processes.push_back(node_process_throughput());
    theirs.push_back(torch_ddp_samples_per_second(peer));
  }
  double o = median(ours), p = median(processes), t = median(theirs);
  std::printf("medians of %d interleaved repeats\n\n", repeats);
  std::printf("%-58s %12s %12s %8s\n", "MLP 784-1024-1024-10, batch 256/replica, N=2", "dtrain", "torch DDP", "ratio");
  std::printf("%-58s %12.0f %12.0f %7.2fx\n", "  samples/s, embedded cluster (1 OpenBLAS thread each)", o, t, t > 0 ? o / t : 0);
  std::printf("%-58s %12.0f %12.0f %7.2fx\n", "  samples/s, head + 2 node processes (the host's share)", p, t, t > 0 ? p / t : 0);
  std::printf("  node processes / embedded: %.3f (goal within 10%%)\n", o > 0 ? p / o : 0);
  const double s = median(step_ms), x = median(exposed_ms);
  std::printf("  step breakdown (embedded, chief): %.2f ms = %.2f ms exposed all-reduce (%.1f%%) + "
              "%.2f ms compute and framework\n",
              s, x, s > 0 ? 100 * x / s : 0, s - x);
  std::printf("\nframework cost, noop operator (1 parameter, 1 sample/replica/step):\n");
  std::printf("  1 replica : %8.1f us per step\n", median(noop1));
  std::printf("  2 replicas: %8.1f us per step (includes a 4-byte all_reduce)\n", median(noop2));
  std::printf("\ndriver start to 2 local replicas ready: %.3f s\n", median(startup));
  std::printf("\nsummary: DP throughput %.2fx PyTorch DDP embedded, %.2fx in node processes (goal "
              ">= 1.3 both); noop step %.1f us with 1 replica (goal < 20); startup %.3f s (goal "
              "< 0.5)\n",
              t > 0 ? o / t : 0, t > 0 ? p / t : 0, median(noop1), median(startup));
  return 0;
}
