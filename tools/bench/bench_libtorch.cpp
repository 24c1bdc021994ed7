// Benchmark: the libtorch adapter (libtorch/dtrain/libtorch/) against
// PyTorch DDP, in one run.
//  1. dtrain + the adapter, N = 2 replicas as threads over the shm
//     communicator: a libtorch MLP 784-1024-1024-10 (ReLU), libtorch's SGD
//     (lr 0.01) through the adapter, libtorch's cross-entropy, batch 256 per
//     replica, 1 thread per replica, synthetic data (`--steps` batches per
//     replica per epoch). A warm-up epoch, then `--epochs` timed ones:
//     samples/s and the all-reduce wait not hidden behind backward per step
//     (epoch_metrics::allreduce_seconds / steps, the chief's).
//  2. The same with N = 1 (the step time without communication), and plain
//     libtorch on the same module with no dtrain (zero_grad, forward,
//     backward, SGD step on one fixed batch, 1 thread): the adapter's cost.
//  3. ../shared/peers/torch_ddp_mlp.py N = 2 (gloo, 1 + 1 threads per rank),
//     run by this program: its step, its exposed all-reduce, and its plain
//     single-process step.
//  4. Overlap, from timestamps: one more N = 2 epoch whose steps time their
//     backward, while a wrapper around the communicator records when each
//     gradient bucket's all_reduce was issued.
//
//   build/bin/dtrain-bench-libtorch [--repeats 3] [--epochs 3] [--steps 40]
//                                   [--bucket-mb 0] [--peer PATH] [--no-peer]
#include <CLI/CLI.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "bench_util.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/comm/observed.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/libtorch/operator.hpp"
#include "dtrain/train/replica.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;
using dtrain::bench::median;

namespace {

constexpr int64_t batch = 256;  // per replica
constexpr int64_t features = 784;
constexpr int64_t classes = 10;

struct mlp_impl : torch::nn::Module {
  mlp_impl()
      : fc1(register_module("fc1", torch::nn::Linear(features, 1024))),
        fc2(register_module("fc2", torch::nn::Linear(1024, 1024))),
        fc3(register_module("fc3", torch::nn::Linear(1024, classes))) {}
  at::Tensor forward(at::Tensor x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE_IMPL(mlp, mlp_impl);

// `samples` rows of normal features with uniform random labels, drawn from
// a generator of its own (every replica and run sees the same set).
result<std::shared_ptr<data::tensor_dataset>> synthetic_set(int64_t samples) {
  auto gen = at::detail::createCPUGenerator(1234);
  at::Tensor x = at::normal(0.0, 1.0, {samples, features}, gen);
  at::Tensor y = at::randint(0, classes, {samples}, gen).to(torch::kFloat32);
  tensor xs = tensor::empty({samples, features}), ys = tensor::empty({samples});
  std::memcpy(xs.data(), x.data_ptr<float>(), x.numel() * sizeof(float));
  std::memcpy(ys.data(), y.data_ptr<float>(), y.numel() * sizeof(float));
  return data::tensor_dataset::create(xs, ys, "synthetic 784");
}

// The probe of part 4: per rank, when each step's forward began and its
// backward began and ended. Written by that rank's training thread only.
struct step_times {
  clock_type::time_point forward, backward, backward_end;
};
struct step_probe {
  bool on = false;
  std::vector<step_times> steps;
};
step_probe probe[2];

/// "bench_torch_mlp": the MLP above with libtorch's SGD and loss. Its
/// training step is the adapter's own, except in a probed epoch (probe[rank]
/// .on), where it is the same step with backward timed. Hyperparameters:
/// samples (the training set's size), lr (0.01).
class bench_operator final : public libtorch::torch_operator {
public:
  status build(const train::hyperparameters& hp, train::replica_context&,
               libtorch::torch_parts& parts) override {
    DTRAIN_ASSIGN_OR_RETURN(int64_t samples, hp.get_int("samples", batch * 40));
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.01));
    mlp net;
    parts.torch_optimizer =
        std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(lr));
    parts.torch_loss = [](const at::Tensor& out, const at::Tensor& target) {
      return torch::nn::functional::cross_entropy(out, target);
    };
    parts.module = torch::nn::AnyModule(net);
    parts.input_shape = {features};
    DTRAIN_ASSIGN_OR_RETURN(parts.train_data, synthetic_set(samples));
    parts.schedule = optim::constant_lr(static_cast<float>(lr));
    return status::ok();
  }

  result<train::step_result> train_step(train::step_context& ctx) override {
    step_probe& p = probe[ctx.replica.rank()];
    if (!p.on)
      return torch_operator::train_step(ctx);
    const auto forward = clock_type::now();
    at::Tensor out = layer().forward_torch(inputs(ctx), true);
    at::Tensor loss = torch::nn::functional::cross_entropy(out, targets(ctx));
    train::step_result r;
    r.loss = loss.item<double>();
    const auto begin = clock_type::now();
    DTRAIN_RETURN_IF_ERROR(backward(ctx, loss));
    p.steps.push_back({forward, begin, clock_type::now()});
    return r;
  }
};

/// When all_reduce calls were issued, and on how many elements: recorded
/// between start() and stop() by the communicators that report to it.
/// Thread-safe.
class launch_log {
public:
  struct launch {
    clock_type::time_point at;
    int64_t numel;
  };
  void start() { set(true); }
  void stop() { set(false); }
  void record(int64_t numel) {
    const auto at = clock_type::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (on_)
      launches_.push_back({at, numel});
  }
  /// The launches of at least `min_numel` elements (gradient buckets, not
  /// the metrics' small all-reduces), in issue order.
  std::vector<launch> launches(int64_t min_numel) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<launch> out;
    for (const auto& l : launches_)
      if (l.numel >= min_numel)
        out.push_back(l);
    return out;
  }

private:
  void set(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_ = on;
  }
  mutable std::mutex mutex_;
  bool on_ = false;
  std::vector<launch> launches_;
};

struct dtrain_figures {
  std::vector<double> samples_per_second, step_ms, exposed_ms;  // one per timed epoch
};

// N replicas as threads over the shm communicator (each wrapped in a
// comm::observed_communicator), a warm-up epoch, `epochs` timed ones; with `probe_rank0`
// one more probed epoch whose launches land in `launches`. Figures are the
// chief's.
result<dtrain_figures> run_dtrain(int n, int epochs, int64_t steps, int64_t bucket_bytes,
                                  launch_log* launches) {
  train::replica_options options;
  options.operator_name = "bench_torch_mlp";
  options.config = train::hyperparameters({{"samples", std::to_string(batch * n * steps)}});
  options.global_batch_size = batch * n;
  options.bucket_bytes = bucket_bytes;
  options.seed = 7;
  auto store = std::make_shared<rendezvous::memory_store>();
  std::vector<status> outcome(n);
  dtrain_figures out;
  auto replica = [&](int rank) -> status {
    comm::group_options go;
    go.rank = rank;
    go.size = n;
    go.store = store;
    go.backend = "shm";
    go.timeout = std::chrono::milliseconds(60000);
    DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(go));
    // Rank 0's all_reduces go to the launch log (the others' to none).
    std::function<void(int64_t)> record;
    if (rank == 0 && launches != nullptr)
      record = [launches](int64_t numel) { launches->record(numel); };
    auto recorded = std::make_unique<comm::observed_communicator>(std::move(c), record);
    train::comm_replica_context::placement where;
    where.local_rank = rank;
    where.seed = options.seed;
    auto ctx = std::make_unique<train::comm_replica_context>(std::move(recorded), where, nullptr);
    DTRAIN_ASSIGN_OR_RETURN(auto runner, train::replica_runner::create(options, std::move(ctx)));
    for (int e = 0; e <= epochs; ++e) {
      DTRAIN_ASSIGN_OR_RETURN(train::epoch_metrics m, runner->train_epoch());
      if (rank == 0 && e > 0 && m.steps > 0) {
        out.samples_per_second.push_back(m.samples_per_second);
        out.step_ms.push_back(m.seconds / static_cast<double>(m.steps) * 1e3);
        out.exposed_ms.push_back(m.allreduce_seconds / static_cast<double>(m.steps) * 1e3);
      }
    }
    if (launches != nullptr) {
      probe[rank] = step_probe{true, {}};
      if (rank == 0)
        launches->start();
      auto probed = runner->train_epoch();
      probe[rank].on = false;
      if (rank == 0)
        launches->stop();
      if (!probed)
        return probed.error();
    }
    return status::ok();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      set_blas_threads(1);
      outcome[r] = replica(r);
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < n; ++r)
    if (!outcome[r].is_ok())
      return status(outcome[r].code(),
                    "replica " + std::to_string(r) + " of " + std::to_string(n) + ": " +
                        outcome[r].to_string());
  return out;
}

// Plain libtorch, no dtrain: the same module and SGD on one fixed batch,
// 1 thread; the median step in ms over `steps` after 3 warm-up steps.
double plain_libtorch_step_ms(int64_t steps) {
  at::set_num_threads(1);
  torch::manual_seed(7);
  mlp net;
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01));
  auto gen = at::detail::createCPUGenerator(1234);
  at::Tensor x = at::normal(0.0, 1.0, {batch, features}, gen);
  at::Tensor y = at::randint(0, classes, {batch}, gen);
  std::vector<double> ms;
  for (int64_t i = 0; i < steps + 3; ++i) {
    const auto begin = clock_type::now();
    opt.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    opt.step();
    if (i >= 3)
      ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - begin).count());
  }
  return median(ms);
}

// OpenBLAS's thread count as each library reports it: Debian's libtorch
// calls libblas.so.3, dtrain libopenblas.so.0 (the former is a front end of
// the latter: one pool, so both must say 1).
std::string blas_pools() {
  std::string out;
  for (const char* name : {"libopenblas.so.0", "libblas.so.3"}) {
    void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    auto get = lib != nullptr ? reinterpret_cast<int (*)()>(dlsym(lib, "openblas_get_num_threads"))
                              : nullptr;
    out += std::string(out.empty() ? "" : ", ") + name + " " +
           (get != nullptr ? std::to_string(get()) : std::string("-"));
    if (lib != nullptr)
      dlclose(lib);
  }
  return out;
}

// Part 4 for the probed epoch: per step, the bucket launches from its
// backward's start to the next step's; prints the median step's.
void print_overlap(const launch_log& log, int64_t min_numel) {
  const auto& steps = probe[0].steps;
  auto launches = log.launches(min_numel);
  struct step_view {
    double backward_ms = 0, first_ms = -1;
    int buckets = 0, before_end = 0;
  };
  auto ms = [](clock_type::time_point from, clock_type::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  std::vector<step_view> views;
  std::vector<double> forward_ms, backward_ms, after_ms;  // steps with a successor
  int overlapped_steps = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const auto begin = steps[s].backward, end = steps[s].backward_end;
    const bool last = s + 1 == steps.size();
    const auto next = last ? clock_type::time_point::max() : steps[s + 1].forward;
    if (!last) {
      forward_ms.push_back(ms(steps[s].forward, begin));
      backward_ms.push_back(ms(begin, end));
      after_ms.push_back(ms(end, next));
    }
    step_view v;
    v.backward_ms = ms(begin, end);
    for (const auto& l : launches) {
      if (l.at < begin || l.at >= next)
        continue;
      const double at = ms(begin, l.at);
      if (v.buckets++ == 0)
        v.first_ms = at;
      v.before_end += l.at < end ? 1 : 0;
    }
    overlapped_steps += v.before_end > 0 ? 1 : 0;
    views.push_back(v);
  }
  if (views.empty()) {
    std::printf("overlap: no probed steps\n");
    return;
  }
  std::sort(views.begin(), views.end(),
            [](const step_view& a, const step_view& b) { return a.backward_ms < b.backward_ms; });
  const step_view& m = views[views.size() / 2];
  std::printf("overlap (rank 0, the step of median backward among %zu probed): %d buckets, %d "
              "launched before backward ended; first launch at %.2f ms of a %.2f ms backward\n",
              views.size(), m.buckets, m.before_end, m.first_ms, m.backward_ms);
  std::printf("  steps with a launch during backward: %d of %zu\n", overlapped_steps,
              views.size());
  std::printf("  where a probed step goes (medians): forward and loss %.2f ms, backward %.2f "
              "ms, then %.2f ms to the next step (the sync's finish, the optimizer, the "
              "loader)\n",
              median(forward_ms), median(backward_ms), median(after_ms));
}

// The 1-minute load average: this host is shared, and figures taken under
// load say so.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

} // namespace

int main(int argc, char** argv) {
  int repeats = 3, epochs = 3;
  int64_t steps = 40;
  double bucket_mb = 0;
  bool no_peer = false;
  std::string peer = DTRAIN_PEERS_DIR "/torch_ddp_mlp.py";
  CLI::App app{"the libtorch adapter against PyTorch DDP"};
  app.add_option("--repeats", repeats, "interleaved repetitions (medians)")->capture_default_str();
  app.add_option("--epochs", epochs, "timed epochs per dtrain run (after a warm-up one)")
      ->capture_default_str();
  app.add_option("--steps", steps, "steps per epoch")->capture_default_str();
  app.add_option("--bucket-mb", bucket_mb, "gradient sync bucket size (0: the CPU default)")
      ->capture_default_str();
  app.add_option("--peer", peer, "torch_ddp_mlp.py")->capture_default_str();
  app.add_flag("--no-peer", no_peer, "skip the DDP peer");
  CLI11_PARSE(app, argc, argv);
  set_blas_threads(1);
  train::register_operator("bench_torch_mlp", [] { return std::make_unique<bench_operator>(); });
  const int64_t bucket_bytes = static_cast<int64_t>(bucket_mb * (1 << 20));

  std::vector<double> n2_rate, n2_step, n2_exposed, n1_rate, n1_step, plain_step;
  std::vector<double> ddp_rate, ddp_step, ddp_exposed, ddp_plain_step;
  for (int r = 0; r < repeats; ++r) {
    auto two = run_dtrain(2, epochs, steps, bucket_bytes, nullptr);
    auto one = run_dtrain(1, epochs, steps, bucket_bytes, nullptr);
    for (auto* run : {&two, &one})
      if (!*run) {
        std::printf("dtrain: %s\n", run->error().to_string().c_str());
        return 1;
      }
    n2_rate.push_back(median(two->samples_per_second));
    n2_step.push_back(median(two->step_ms));
    n2_exposed.push_back(median(two->exposed_ms));
    n1_rate.push_back(median(one->samples_per_second));
    n1_step.push_back(median(one->step_ms));
    plain_step.push_back(plain_libtorch_step_ms(steps));
    if (!no_peer) {
      auto d = bench::run_torch_ddp_mlp(peer, {2}, 30);
      if (d.rows.count(2) == 0) {
        std::printf("the peer printed no N=2 row (%s)\n", peer.c_str());
        return 1;
      }
      ddp_rate.push_back(d.rows[2].samples_per_second);
      ddp_step.push_back(d.rows[2].step_ms);
      ddp_exposed.push_back(d.rows[2].exposed_ms);
      ddp_plain_step.push_back(d.single_process_ms);
    }
    // Each repeat as it ends: on a shared host the spread says how far to
    // trust the medians.
    std::printf("repeat %d: N=2 %.0f samples/s (DDP %.0f), N=1 step %.2f ms, plain %.2f ms, "
                "load %s\n",
                r + 1, n2_rate.back(), ddp_rate.empty() ? 0.0 : ddp_rate.back(), n1_step.back(),
                plain_step.back(), load_average().c_str());
    std::fflush(stdout);
  }
  std::printf("\n");

  launch_log log;
  if (auto probed = run_dtrain(2, 1, steps, bucket_bytes, &log); !probed) {
    std::printf("probed run: %s\n", probed.error().to_string().c_str());
    return 1;
  }

  const double o = median(n2_rate), t = median(ddp_rate);
  std::printf("libtorch %s, MLP 784-1024-1024-10, batch %lld/replica, SGD lr 0.01, 1 thread per "
              "replica (OpenBLAS threads: %s); %u cores, load %s; medians of %d interleaved repeats, each "
              "the median of %d epochs of %lld steps\n\n",
              TORCH_VERSION, static_cast<long long>(batch), blas_pools().c_str(),
              std::thread::hardware_concurrency(), load_average().c_str(), repeats, epochs,
              static_cast<long long>(steps));
  std::printf("%-44s %12s %12s %8s\n", "", "dtrain+torch", "torch DDP", "ratio");
  std::printf("%-44s %12.0f %12.0f %7.2fx\n", "N=2 samples/s", o, t, t > 0 ? o / t : 0);
  // Each repeat's dtrain and DDP ran minutes apart at most: the median of
  // their ratios cancels more of a shared host's drift than the ratio of
  // the medians.
  std::vector<double> paired;
  for (size_t i = 0; i < ddp_rate.size(); ++i)
    paired.push_back(ddp_rate[i] > 0 ? n2_rate[i] / ddp_rate[i] : 0);
  std::printf("%-44s %12s %12s %7.2fx\n", "  median of the per-repeat ratios", "", "",
              median(paired));
  std::printf("%-44s %12.2f %12.2f\n", "N=2 step ms", median(n2_step), median(ddp_step));
  std::printf("%-44s %12.2f %12.2f\n", "N=2 exposed all-reduce ms per step", median(n2_exposed),
              median(ddp_exposed));
  std::printf("%-44s %12.2f %12s\n", "N=1 step ms (adapter, no communication)", median(n1_step),
              "");
  std::printf("%-44s %12.2f %12.2f\n", "plain step ms (libtorch C++ | python, 1 thr)",
              median(plain_step), median(ddp_plain_step));
  const double p = median(plain_step), a = median(n1_step);
  std::printf("%-44s %12.0f\n", "N=1 samples/s", median(n1_rate));
  std::printf("  adapter overhead at N=1: %.2f ms per step (%.1f%% of plain libtorch)\n", a - p,
              p > 0 ? 100 * (a - p) / p : 0);
  std::printf("  scaling N=1 -> N=2: %.2fx\n\n", median(n1_rate) > 0 ? o / median(n1_rate) : 0);
  print_overlap(log, 1024);
  std::printf("\nsummary: N=2 %.0f samples/s = %.2fx DDP (paired %.2fx; goal >= 1.0); exposed all-reduce %.2f "
              "ms vs DDP %.2f ms per step; adapter overhead %.1f%%\n",
              o, t > 0 ? o / t : 0, median(paired), median(n2_exposed), median(ddp_exposed),
              p > 0 ? 100 * (a - p) / p : 0);
  return 0;
}
