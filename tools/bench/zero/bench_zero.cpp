// The dtrain side of issue 29's ZeRO benchmark (tools/bench/zero/run.sh runs
// it beside torch_zero_peer.py; README.md beside this file).
//
// PyTorch's ZeroRedundancyOptimizer recipe model: `mlp_classifier` with 2000
// inputs, hidden 19 x 2000 and 2000 classes (20 Linear(2000, 2000) layers,
// ReLU between them), Adam lr 1e-3 at a constant rate, cross-entropy, on
// synthetic data (uniform inputs, random labels; .npy files this program
// writes). For each ZeRO stage asked, a fresh head and N one-slot node
// processes of the `dtrain` binary beside this one on loopback (one replica
// per process, one compute thread per replica: cpus_per_replica 1 and
// OMP/OpenBLAS 1), one epoch of `warmup + steps` steps of `batch` samples per
// replica. Reports, per configuration:
//
//  - the chief's (rank 0's) memory accounting from the epoch metrics:
//    memory.parameters_bytes, memory.gradients_bytes, memory.optimizer_bytes
//    (absent -> -1: a build without the accounting);
//  - the peak RSS (VmHWM) of each node process hosting a replica, and the
//    peak of its Pss sampled every 100 ms (the shm communicator maps a
//    shared gradient buffer of N ranks' size in every process: RSS counts
//    all of it in each, Pss a 1/N share), with RssAnon and RssShmem at the
//    end;
//  - the median step time of the chief, from its per-step progress (the
//    replica's own clock), over the steps after `warmup`, and samples/s
//    = N x batch / that median. The epoch has one step more than timed
//    (warmup + steps + 1): progress reports a step's end when the next
//    batch is taken, so the last step has none.
//
// One line per configuration, then a table:
//
//   RESULT {"side":"dtrain","mode":"stage0","n":2,...}
//
//   build/bin/dtrain-bench-zero --replicas 2 [--stages 0 1 2] [--batch 16]
//       [--steps 12] [--warmup 3]
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"
#include "local_nodes.hpp"

using namespace dtrain;

namespace {

constexpr int64_t width = 2000;  // inputs, every hidden layer and classes
constexpr int layers = 20;

struct options {
  int replicas = 2;
  std::vector<int> stages{0};
  int64_t batch = 16, steps = 12, warmup = 3;
  uint64_t seed = 0;
  int64_t node_memory_mib = 0;  // 0: no limit
};

// A memory cgroup per node process: what a replica is given, as a
// scheduler (Slurm, Kubernetes) gives a job. The kernel kills a process of
// the group that goes past the limit (OOM). cgroup v2 where its memory
// controller is enabled, else v1's memory hierarchy; removed on
// destruction (after its processes are gone).
class memory_cage {
public:
  memory_cage(const std::string& name, int64_t bytes) {
    namespace fs = std::filesystem;
    std::ifstream controllers("/sys/fs/cgroup/cgroup.controllers");
    std::string line;
    std::getline(controllers, line);
    v2_ = line.find("memory") != std::string::npos;
    dir_ = (v2_ ? "/sys/fs/cgroup/" : "/sys/fs/cgroup/memory/") + name;
    std::error_code ec;
    fs::create_directory(dir_, ec);
    if (ec) {
      made_ = io_error("cannot create the cgroup " + dir_ + ": " + ec.message() +
                       " (needs root and a writable memory cgroup)");
      return;
    }
    made_ = write(v2_ ? "memory.max" : "memory.limit_in_bytes", std::to_string(bytes));
    if (made_.is_ok() && !v2_)  // no swap to spill into either
      (void)write("memory.memsw.limit_in_bytes", std::to_string(bytes));
  }
  ~memory_cage() {
    std::error_code ec;
    for (int i = 0; i < 50 && std::filesystem::exists(dir_, ec); ++i) {
      if (rmdir(dir_.c_str()) == 0)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // processes leaving
    }
  }
  memory_cage(const memory_cage&) = delete;
  memory_cage& operator=(const memory_cage&) = delete;

  const status& made() const { return made_; }
  status add(pid_t pid) { return write("cgroup.procs", std::to_string(pid)); }
  /// Processes of the group the kernel killed for memory so far.
  int64_t oom_kills() const {
    std::ifstream f(dir_ + (v2_ ? "/memory.events" : "/memory.oom_control"));
    std::string key;
    int64_t value = 0;
    while (f >> key >> value)
      if (key == "oom_kill")
        return value;
    return 0;
  }
  /// The most memory the group held at once (v1; -1 where unknown).
  int64_t peak_bytes() const {
    std::ifstream f(dir_ + (v2_ ? "/memory.peak" : "/memory.max_usage_in_bytes"));
    int64_t value = -1;
    f >> value;
    return value;
  }

private:
  status write(const std::string& file, const std::string& value) {
    std::ofstream f(dir_ + "/" + file);
    f << value;
    f.flush();
    if (!f)
      return io_error("cannot write " + value + " to " + dir_ + "/" + file);
    return status::ok();
  }
  bool v2_ = false;
  std::string dir_;
  status made_;
};


// An .npy file (format 1.0) of `descr` values of `shape`, the bytes given.
status write_npy(const std::string& path, const std::string& descr,
                 const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ",";
  if (shape.size() > 1)
    dims.pop_back();
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;  // magic, version, length, '\n'
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const uint16_t length = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(length & 0xff));
  f.put(static_cast<char>(length >> 8));
  f << header;
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f)
    return io_error("cannot write " + path);
  return status::ok();
}

// `samples` uniform inputs of `width` features and labels in [0, width),
// the last label width - 1 so that the set has exactly `width` classes.
status write_synthetic(const std::string& dir, int64_t samples, uint64_t seed,
                       std::string& features, std::string& targets) {
  std::vector<float> x(static_cast<size_t>(samples * width));
  std::vector<int64_t> y(static_cast<size_t>(samples));
  uint64_t state = seed * 2654435761u + 1;
  auto next = [&state] {  // xorshift64*: fast, and good enough for noise
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
  };
  for (float& v : x)
    v = static_cast<float>(next() >> 40) / static_cast<float>(1 << 24);
  for (int64_t& v : y)
    v = static_cast<int64_t>(next() % width);
  y.back() = width - 1;
  features = dir + "/features.npy";
  targets = dir + "/targets.npy";
  DTRAIN_RETURN_IF_ERROR(write_npy(features, "<f4", {samples, width}, x.data(), x.size() * 4));
  return write_npy(targets, "<i8", {samples}, y.data(), y.size() * 8);
}

/// One configuration's figures.
struct row {
  int stage = 0, n = 0;
  double parameters_bytes = -1, gradients_bytes = -1, optimizer_bytes = -1;
  std::vector<double> peak_rss_bytes;  // per replica, in rank order
  std::vector<double> cage_peak_bytes;  // per node's memory cgroup (--node-memory-mib)
  // At the end, per replica: private (anonymous) and shared-memory pages
  // resident; the shm communicator's segment counts in every process's RSS.
  std::vector<double> rss_anon_bytes, rss_shmem_bytes;
  // Per replica, the peak of its Pss (shared pages split among the
  // processes mapping them), sampled every 100 ms during the epoch.
  std::vector<double> peak_pss_bytes;
  std::vector<double> all_steps_ms;    // every step's, warm-up included
  double step_ms = 0, samples_per_second = 0, epoch_samples_per_second = 0, loss = 0;
};

/// The chief's progress -> the seconds each step took (its own clock).
class step_clock {
public:
  void on_progress(const train::step_progress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (p.step <= last_step_)
      return;
    if (p.step == last_step_ + 1 && last_step_ >= 0)
      steps_.push_back(p.seconds - last_seconds_);
    else if (p.step == 1)
      steps_.push_back(p.seconds);  // the first step, from the epoch's start
    last_step_ = p.step;
    last_seconds_ = p.seconds;
  }
  /// The steps' times past the first `warmup`, in ms.
  std::vector<double> after(int64_t warmup) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<double> out;
    for (size_t i = static_cast<size_t>(warmup); i < steps_.size(); ++i)
      out.push_back(steps_[i] * 1e3);
    return out;
  }

private:
  std::mutex mutex_;
  int64_t last_step_ = 0;
  double last_seconds_ = 0;
  std::vector<double> steps_;
};

actors::trainer_config make_config(const options& o, const std::string& features,
                                   const std::string& targets, step_clock& clock) {
  actors::trainer_config c;
  c.name = "bench-zero";
  c.operator_name = "mlp_classifier";
  std::string hidden;
  for (int i = 0; i + 1 < layers; ++i)
    hidden += (hidden.empty() ? "" : ",") + std::to_string(width);
  c.config = {{"hidden", hidden},
              {"optimizer", "adam"},
              {"lr", "0.001"},
              {"schedule", "constant"},
              {"epochs", "1"},
              {"data.train.format", "npy"},
              {"data.train.path", features},
              {"data.train.targets", targets}};
  c.num_replicas = o.replicas;
  c.global_batch_size = o.batch * o.replicas;
  c.cpus_per_replica = 1;
  c.average_training_metrics = false;  // the chief's own memory accounting
  c.seed = o.seed;
  c.max_failures = 0;
  // A node killed at its memory limit ends the run within two minutes.
  c.collective_timeout = std::chrono::milliseconds(o.node_memory_mib > 0 ? 120000 : 600000);
  c.epoch_timeout = std::chrono::milliseconds(3600000);
  c.progress_seconds = 1e-6;  // every step
  c.on_progress = [&clock](const train::step_progress& p) { clock.on_progress(p); };
  return c;
}

double extra_or(const train::epoch_metrics& m, const std::string& key) {
  auto it = m.extra.find(key);
  return it == m.extra.end() ? -1 : it->second;
}

// Each replica's process figures into `r`, in rank order (the placement's).
// Each replica's node process is one this program started (one slot each),
// so its figures are the replica's.
status read_processes(const actors::trainer& t, const bench::local_nodes& nodes, row& r) {
  for (const auto& a : t.placement()) {
    const int64_t pid = a.info.pid;
    if (!nodes.owns(pid))
      return status(error_code::internal, "replica on pid " + std::to_string(pid) +
                                              ", not a node process this benchmark started");
    DTRAIN_ASSIGN_OR_RETURN(int64_t hwm, bench::proc_status_bytes(pid, "VmHWM:"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t anon, bench::proc_status_bytes(pid, "RssAnon:"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t shmem, bench::proc_status_bytes(pid, "RssShmem:"));
    r.peak_rss_bytes.push_back(static_cast<double>(hwm));
    r.rss_anon_bytes.push_back(static_cast<double>(anon));
    r.rss_shmem_bytes.push_back(static_cast<double>(shmem));
  }
  return status::ok();
}

result<row> run_stage(const options& o, int stage) {
  // Declared before the nodes, so destroyed after them: a cgroup can be
  // removed only once its processes are gone.
  std::vector<std::unique_ptr<memory_cage>> cages;
  bench::local_nodes nodes("dtrain-bench-zero", o.replicas);
  DTRAIN_RETURN_IF_ERROR(nodes.started());
  // Each node process in a cage of its own before any replica starts.
  for (pid_t pid : o.node_memory_mib > 0 ? nodes.node_pids() : std::vector<pid_t>{}) {
    cages.push_back(std::make_unique<memory_cage>(
        "dtrain-bench-zero-" + std::to_string(getpid()) + "-" + std::to_string(pid),
        o.node_memory_mib << 20));
    DTRAIN_RETURN_IF_ERROR(cages.back()->made());
    DTRAIN_RETURN_IF_ERROR(cages.back()->add(pid));
  }
  auto killed = [&cages] {
    int64_t n = 0;
    for (const auto& c : cages)
      n += c->oom_kills();
    return n;
  };
  std::string features, targets;
  // One step more than timed: the chief reports a step's end when it takes
  // the next batch, so the epoch's last step has no progress of its own.
  const int64_t samples = o.batch * o.replicas * (o.warmup + o.steps + 1);
  DTRAIN_RETURN_IF_ERROR(write_synthetic(nodes.home(), samples, o.seed, features, targets));
  step_clock clock;
  actors::trainer_config config = make_config(o, features, targets, clock);
  config.zero_stage = stage;
  DTRAIN_ASSIGN_OR_RETURN(auto c, actors::cluster::connect({nodes.address(), 0, 0,
                                                             std::chrono::milliseconds(20000)}));
  auto created = actors::trainer::create(*c, config);
  if (!created)
    return created.error().with_context(
        killed() > 0 ? std::to_string(killed()) + " node(s) killed for memory (OOM) at their " +
                           std::to_string(o.node_memory_mib) + " MiB limit"
                     : std::string("creating the trainer"));
  auto t = std::move(*created);
  std::vector<int64_t> pids;
  for (const auto& a : t->placement())
    pids.push_back(a.info.pid);
  bench::pss_sampler pss(pids, std::chrono::milliseconds(100));
  auto trained = t->train();
  pss.stop();
  if (!trained)
    return trained.error().with_context(
        killed() > 0 ? std::to_string(killed()) + " node(s) killed for memory (OOM) at their " +
                           std::to_string(o.node_memory_mib) + " MiB limit"
                     : std::string("training"));
  const train::epoch_metrics& m = *trained;
  row r;
  r.stage = stage;
  r.n = o.replicas;
  for (int64_t peak : pss.peaks())
    r.peak_pss_bytes.push_back(static_cast<double>(peak));
  DTRAIN_RETURN_IF_ERROR(read_processes(*t, nodes, r));
  for (const auto& cage : cages)
    r.cage_peak_bytes.push_back(static_cast<double>(cage->peak_bytes()));
  r.parameters_bytes = extra_or(m, "memory.parameters_bytes");
  r.gradients_bytes = extra_or(m, "memory.gradients_bytes");
  r.optimizer_bytes = extra_or(m, "memory.optimizer_bytes");
  r.all_steps_ms = clock.after(0);
  r.step_ms = bench::median(clock.after(o.warmup));
  r.samples_per_second = r.step_ms > 0 ? o.batch * o.replicas / (r.step_ms / 1e3) : 0;
  r.epoch_samples_per_second = m.samples_per_second;
  r.loss = m.loss;
  (void)t->shutdown();
  return r;
}

std::string json_list(const std::vector<double>& v) {
  std::string out = "[";
  for (double x : v)
    out += (out.size() > 1 ? "," : "") + std::to_string(static_cast<int64_t>(x));
  return out + "]";
}

void print_result(const options& o, const row& r) {
  std::printf("RESULT {\"side\":\"dtrain\",\"mode\":\"stage%d\",\"n\":%d,\"batch_per_rank\":%lld,"
              "\"steps\":%lld,\"threads_per_rank\":1,\"parameters_bytes\":%.0f,"
              "\"gradients_bytes\":%.0f,\"optimizer_bytes\":%.0f,\"peak_rss_bytes\":%s,"
              "\"end_rss_anon_bytes\":%s,\"end_rss_shmem_bytes\":%s,\"peak_pss_bytes\":%s,"
              "\"step_ms\":%.3f,\"samples_per_second\":%.3f,\"epoch_samples_per_second\":%.3f,"
              "\"loss\":%.4f,\"all_steps_ms\":%s,\"node_memory_mib\":%lld,"
              "\"cage_peak_bytes\":%s}\n",
              r.stage, r.n, static_cast<long long>(o.batch), static_cast<long long>(o.steps),
              r.parameters_bytes, r.gradients_bytes, r.optimizer_bytes,
              json_list(r.peak_rss_bytes).c_str(), json_list(r.rss_anon_bytes).c_str(),
              json_list(r.rss_shmem_bytes).c_str(), json_list(r.peak_pss_bytes).c_str(), r.step_ms, r.samples_per_second,
              r.epoch_samples_per_second, r.loss, json_list(r.all_steps_ms).c_str(),
              static_cast<long long>(o.node_memory_mib), json_list(r.cage_peak_bytes).c_str());
  std::fflush(stdout);
}

void print_table(const std::vector<row>& rows) {
  auto mib = [](double b) { return b < 0 ? -1.0 : b / (1 << 20); };
  std::printf("\ndtrain, mlp_classifier 2000 -> 19 x 2000 -> 2000 (ReLU), Adam, node processes on "
              "loopback, 1 thread per replica (cpus_per_replica 1, OMP/OpenBLAS 1)\n");
  std::printf("%-7s %2s %14s %14s %14s %18s %9s %10s\n", "stage", "N", "params MiB/r0",
              "grads MiB/r0", "optim MiB/r0", "peak RSS MiB (max)", "step ms", "samples/s");
  for (const auto& r : rows) {
    const double rss = r.peak_rss_bytes.empty()
                           ? 0
                           : *std::max_element(r.peak_rss_bytes.begin(), r.peak_rss_bytes.end());
    std::printf("%-7d %2d %14.1f %14.1f %14.1f %18.1f %9.1f %10.1f\n", r.stage, r.n,
                mib(r.parameters_bytes), mib(r.gradients_bytes), mib(r.optimizer_bytes), mib(rss),
                r.step_ms, r.samples_per_second);
  }
}

} // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"issue 29's ZeRO benchmark, the dtrain side (tools/bench/zero/run.sh)"};
  app.add_option("--replicas", o.replicas, "N, one node process each")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--stages", o.stages, "ZeRO stages, one configuration each")
      ->check(CLI::Range(0, 3))->capture_default_str();
  app.add_option("--batch", o.batch, "samples per replica per step")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps first")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--seed", o.seed, "model and data seed")->capture_default_str();
  app.add_option("--node-memory-mib", o.node_memory_mib,
                 "a memory cgroup of this many MiB around each node process (root; 0: none)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // The node processes inherit these: one BLAS thread, whatever the library.
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  std::vector<row> rows;
  int failed = 0;
  for (int stage : o.stages) {
    auto r = run_stage(o, stage);
    if (!r) {
      std::fprintf(stderr, "dtrain-bench-zero: stage %d, N=%d: %s\n", stage, o.replicas,
                   r.error().to_string().c_str());
      // A configuration that failed is a figure too (--node-memory-mib:
      // the one that does not fit).
      std::printf("RESULT {\"side\":\"dtrain\",\"mode\":\"stage%d\",\"n\":%d,"
                  "\"node_memory_mib\":%lld,\"failed\":true}\n",
                  stage, o.replicas, static_cast<long long>(o.node_memory_mib));
      std::fflush(stdout);
      ++failed;
      continue;
    }
    print_result(o, *r);
    rows.push_back(*r);
  }
  print_table(rows);
  return failed == 0 ? 0 : 1;
}
