#include "dtrain/core/threads.hpp"

#include <cblas.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dtrain/core/hash.hpp"
#include "dtrain/core/net.hpp"

namespace dtrain {

void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

int blas_threads() { return openblas_get_num_threads(); }

int name_blas_pool_threads() {
  namespace fs = std::filesystem;
  const std::string self = std::to_string(static_cast<long>(gettid()));
  int named = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/self/task", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string tid = it->path().filename().string();
    if (tid == self || tid == std::to_string(static_cast<long>(getpid())))
      continue;
    std::ofstream comm(it->path() / "comm");
    comm << "dtrain-blas";
    comm.flush();
    named += comm.good() ? 1 : 0;
  }
  return named;
}

namespace {
std::atomic<int> process_budget{0};
std::atomic<int> process_replicas{0};  // live blas_share objects in this process
} // namespace

void set_cpu_budget(int cpus) { process_budget.store(std::max(cpus, 0)); }

int cpu_budget() { return process_budget.load(); }

namespace {

namespace fs = std::filesystem;

// The registry of this host's replicas: per user (the directory must be
// writable) and per host identity (network namespaces on one kernel are
// different hosts to dtrain, and their replicas do not share a count).
fs::path registry() {
  const std::string name = "dtrain-blas-" + std::to_string(getuid()) + "-" +
                           hash::hex16(hash::fnv1a(net::host_identity()));
  fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  return base / name;
}

bool process_alive(long pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

bool user_fixed_threads() {
  const char* v = std::getenv("OPENBLAS_NUM_THREADS");
  return v != nullptr && *v != '\0';
}

} // namespace

blas_share::blas_share(int fixed) : fixed_(std::max(fixed, 0)) {
  ++process_replicas;
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  fs::path dir = registry();
  fs::path entry = dir / (std::to_string(getpid()) + "." + std::to_string(counter++));
  // Twice: the last replica of another process may remove the directory
  // between our create_directories and our file.
  for (int attempt = 0; attempt < 2 && entry_.empty(); ++attempt) {
    fs::create_directories(dir, ec);
    std::ofstream(entry.string()) << getpid() << "\n";
    if (fs::exists(entry, ec))
      entry_ = entry.string();
  }
}

blas_share::~blas_share() {
  --process_replicas;
  if (!entry_.empty()) {
    std::error_code ec;
    fs::remove(entry_, ec);
    fs::remove(fs::path(entry_).parent_path(), ec);  // only when it is empty: the last one out
  }
}

int blas_share::refresh() {
  int live = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(registry(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    long pid = std::strtol(name.c_str(), nullptr, 10);
    if (process_alive(pid)) {
      ++live;
    } else {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
  replicas_ = std::max(live, 1);
  if (user_fixed_threads())
    return blas_threads();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int budget = cpu_budget();
  // The budget is for all of this process's replicas together.
  const int budget_share = budget / std::max(process_replicas.load(), 1);
  int share = fixed_ > 0 ? fixed_ : cores / replicas_;
  if (budget > 0)
    share = std::min(share, budget_share);
  share = std::max(share, 1);
  if (share != blas_threads())
    set_blas_threads(share);
  return share;
}

} // namespace dtrain
