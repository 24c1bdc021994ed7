// Benchmark: how long a training step is blocked by a checkpoint of about
// 1 GiB of state (an MLP of ~90 M parameters with Adam: parameters and two
// moment buffers), asynchronous (train/async_checkpoint.hpp: a snapshot in
// host memory at a step boundary, written by a background thread) against
// the synchronous replica_runner::save() of the same state, and the
// training throughput while asynchronous saves run back to back against
// training without saves. Two one-replica groups of the same model on
// Fashion-MNIST, one saving and one not; every "epoch" is cut to 16 steps
// by preemption.
//
//   build/bin/dtrain-bench-checkpoint-stall [--hidden 114000] [--dir /tmp]
//       [--repeats 3] [--every 4]
//
// Figures (medians over the steps and repeats):
//   step           a step without saves (time between two steps' starts)
//   sync save      replica_runner::save() (shard, manifest, publish)
//   async stall    the snapshot: what the step that takes it is blocked for
//   snapshot step  that step, whole, minus a step without saves
//   throughput     samples/s over the steps of epochs with saves in flight,
//                  against epochs without saves (median of the epochs; the
//                  drain of the save in flight at an epoch's end is not a
//                  step and is left out: a real epoch is thousands of
//                  steps long). Epochs of the two kinds alternate, so that
//                  both see the same load on a shared host.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/train/replica.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;
using dtrain::bench::median;

namespace {

void die(const status& s) {
  if (!s.is_ok()) {
    std::fprintf(stderr, "dtrain-bench-checkpoint-stall: %s\n", s.to_string().c_str());
    std::exit(1);
  }
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// What the progress callback sees: the start of every step, and how many
// snapshots had been taken by then.
struct step_log {
  std::vector<clock_type::time_point> starts;
  std::vector<int64_t> snapshots;
  const train::replica_runner* runner = nullptr;
};

std::unique_ptr<train::replica_runner> make_runner(const train::replica_options& options) {
  comm::group_options go;
  go.rank = 0;
  go.size = 1;
  go.store = std::make_shared<rendezvous::memory_store>();
  go.backend = "shm";
  go.timeout = std::chrono::milliseconds(60000);
  auto c = comm::make_communicator(go);
  die(c.to_status());
  auto ctx = std::make_unique<train::comm_replica_context>(
      std::move(*c), train::comm_replica_context::placement{}, nullptr);
  auto r = train::replica_runner::create(options, std::move(ctx));
  die(r.to_status());
  return std::move(*r);
}

// Trains `epochs` epochs of 16 steps; the step durations (the first of
// each epoch left out: the loader's start) and, for each, whether a
// snapshot was taken during it.
struct steps_seen {
  std::vector<double> plain, snapshot;
  double samples_per_second = 0;
};

steps_seen train_cut_epochs(train::replica_runner& r, step_log& log, int epochs,
                            int64_t batch) {
  steps_seen out;
  double seconds = 0;
  int64_t steps = 0;
  for (int e = 0; e < epochs; ++e) {
    log.starts.clear();
    log.snapshots.clear();
    r.request_preemption();  // answered after 16 steps
    auto m = r.train_epoch();
    die(m.to_status());
    // Step i lasts from its start to the next one's.
    for (size_t i = 1; i + 1 < log.starts.size(); ++i) {
      const double d = std::chrono::duration<double>(log.starts[i + 1] - log.starts[i]).count();
      (log.snapshots[i + 1] > log.snapshots[i] ? out.snapshot : out.plain).push_back(d);
      seconds += d;
      ++steps;
    }
  }
  out.samples_per_second = seconds > 0 ? static_cast<double>(steps * batch) / seconds : 0;
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"Step stall of asynchronous vs synchronous checkpoints of ~1 GiB of state"};
  int64_t hidden = 114000;
  std::string dir = "/tmp";
  int repeats = 3, every = 4;
  int64_t batch = 32;
  app.add_option("--hidden", hidden, "the MLP's hidden width (114000: ~1 GiB with Adam)");
  app.add_option("--dir", dir, "where checkpoints go");
  app.add_option("--repeats", repeats, "synchronous saves, and epochs of each kind");
  app.add_option("--every", every, "steps between asynchronous saves");
  app.add_option("--batch", batch, "the global batch");
  CLI11_PARSE(app, argc, argv);
  const char* data = std::getenv("DTRAIN_FASHION_MNIST");
  train::replica_options options;
  options.operator_name = "mlp_classifier";
  options.config = train::hyperparameters(std::map<std::string, std::string>{
      {"hidden", std::to_string(hidden)},
      {"data_dir", data != nullptr ? data : "/usr/share/datasets/fashion-mnist"}});
  options.global_batch_size = batch;
  options.codec = serialization::default_checkpoint_codec();
  options.progress_seconds = 1e-9;  // a callback at every step
  const std::string root = dir + "/dtrain-checkpoint-stall";
  std::filesystem::remove_all(root);
  step_log log;
  options.on_progress = [&log](const train::step_progress&) {
    log.starts.push_back(clock_type::now());
    const auto* a = log.runner ? log.runner->async_checkpoints() : nullptr;
    log.snapshots.push_back(a ? a->counters().started : 0);
  };

  // Two replicas of the same model, one saving asynchronously every
  // `every` steps (always one save in flight), the other not: their epochs
  // alternate, so that both see the same load on a shared host, and the
  // one without saves also times synchronous saves.
  auto plain = make_runner(options);
  const int64_t params = plain->parameters().numel();
  const double state_gib = 3.0 * static_cast<double>(params) * 4 / (1 << 30);
  std::printf("model: %lld parameters, %.2f GiB of state with Adam's moments\n",
              static_cast<long long>(params), state_gib);
  options.async_checkpoint.root = root + "/async";
  options.async_checkpoint.every_steps = every;
  options.async_checkpoint.keep_last = 1;
  auto saving = make_runner(options);
  // Warm-up: Adam's state allocated, the snapshot's pages touched once.
  log.runner = plain.get();
  (void)train_cut_epochs(*plain, log, 1, batch);
  log.runner = saving.get();
  (void)train_cut_epochs(*saving, log, 1, batch);
  const auto before = saving->async_checkpoints()->counters();
  steps_seen base, async;
  std::vector<double> sync_saves, base_rate, async_rate;
  for (int i = 0; i < repeats; ++i) {
    log.runner = plain.get();
    steps_seen b = train_cut_epochs(*plain, log, 1, batch);
    log.runner = saving.get();
    steps_seen a = train_cut_epochs(*saving, log, 1, batch);
    base.plain.insert(base.plain.end(), b.plain.begin(), b.plain.end());
    async.plain.insert(async.plain.end(), a.plain.begin(), a.plain.end());
    async.snapshot.insert(async.snapshot.end(), a.snapshot.begin(), a.snapshot.end());
    base_rate.push_back(b.samples_per_second);
    async_rate.push_back(a.samples_per_second);
    const auto start = clock_type::now();
    die(plain->save(root + "/sync", {}, 1, ""));
    sync_saves.push_back(seconds_since(start));
  }
  base.samples_per_second = median(base_rate);
  async.samples_per_second = median(async_rate);
  const auto after = saving->async_checkpoints()->counters();
  plain.reset();
  saving.reset();
  std::filesystem::remove_all(root);

  const double step = median(base.plain), sync = median(sync_saves);
  const int64_t snapshots = after.started - before.started;
  const double stall = snapshots > 0 ? (after.snapshot_seconds - before.snapshot_seconds) /
                                           static_cast<double>(snapshots)
                                     : 0;
  const double snapshot_step = async.snapshot.empty() ? 0 : median(async.snapshot) - step;
  std::printf("%-34s %10s\n", "", "seconds");
  std::printf("%-34s %10.3f\n", "step without saves (median)", step);
  std::printf("%-34s %10.3f\n", "step with saves in flight (median)", median(async.plain));
  std::printf("%-34s %10.3f\n", "synchronous save (median)", sync);
  std::printf("%-34s %10.3f\n", "asynchronous stall (mean snapshot)", stall);
  std::printf("%-34s %10.3f\n", "snapshot step minus a plain step", snapshot_step);
  std::printf("saves: %lld started, %lld published, %lld waited, %lld failed (of epochs of 16 steps)\n",
              static_cast<long long>(snapshots),
              static_cast<long long>(after.published - before.published),
              static_cast<long long>(after.waited - before.waited),
              static_cast<long long>(after.failed - before.failed));
  std::printf("throughput: %.1f samples/s without saves, %.1f with saves in flight (%.0f%%)\n",
              base.samples_per_second, async.samples_per_second,
              100.0 * async.samples_per_second / base.samples_per_second);
  std::printf("summary: %.2f GiB of state: synchronous save %.2f s, asynchronous stall %.3f s "
              "(%.1f%% of it; the snapshot step %.3f s longer), throughput while saving %.0f%%\n",
              state_gib, sync, stall, 100.0 * stall / sync, snapshot_step,
              100.0 * async.samples_per_second / base.samples_per_second);
  return 0;
}
