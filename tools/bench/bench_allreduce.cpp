// Benchmark: all_reduce (sum, float32, in place) of 4 KiB, 256 KiB, 4 MiB and
// 64 MiB at N = 2 and 4 ranks (separate processes), for each CPU backend,
// side by side with PyTorch's gloo all_reduce (../shared/peers/torch_allreduce.py)
// run by this program in the same invocation, and the machine's memcpy
// bandwidth as the physical limit. Same method as the peer: barrier, time
// one all_reduce, the maximum across ranks per iteration, the median.
//
//   build/bin/dtrain-bench-allreduce [--nprocs 2 4] [--backends shm gloo hierarchical]
//
// hierarchical runs its ranks as two "hosts" (alternating ranks) on this
// machine: shared memory inside each, Gloo between the two leaders.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/spawn.hpp"
#include "bench_util.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/check.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

using dtrain::bench::median;

namespace {

const std::vector<int64_t> sizes{4 << 10, 256 << 10, 4 << 20, 64 << 20};

// Median memcpy time of 64 MiB between two pre-faulted buffers, as GB/s.
double memcpy_gbps() {
  std::vector<char> a(64 << 20, 1), b(64 << 20, 2);
  std::vector<double> t;
  for (int i = 0; i < 10; ++i) {
    auto start = clock_type::now();
    std::memcpy(b.data(), a.data(), a.size());
    t.push_back(std::chrono::duration<double>(clock_type::now() - start).count());
  }
  return static_cast<double>(a.size()) / median(t) / 1e9;
}

// One rank: per size, the per-iteration max across ranks, median, in us.
status bench_rank(const std::string& backend, int rank, int n, const std::string& dir,
                  int iters_small, int iters_big) {
  DTRAIN_ASSIGN_OR_RETURN(auto files, rendezvous::file_store::open(dir));
  auto store = std::make_shared<rendezvous::prefix_store>(backend + std::to_string(n),
                                                    std::shared_ptr<rendezvous::store>(std::move(files)));
  comm::group_options options;
  options.rank = rank;
  options.size = n;
  options.store = store;
  options.backend = backend;
  options.timeout = milliseconds(60000);
  if (backend == "hierarchical")  // two "hosts" on this machine, ranks alternating
    options.host = "host" + std::to_string(rank % 2);
  DTRAIN_ASSIGN_OR_RETURN(auto c, comm::make_communicator(options));
  std::string line;
  for (int64_t bytes : sizes) {
    tensor buf = tensor::full({bytes / 4}, 1.0f);
    int iters = bytes >= (4 << 20) ? iters_big : iters_small;
    tensor times = tensor::zeros({iters});
    for (int it = 0; it < 3 + iters; ++it) {
      DTRAIN_RETURN_IF_ERROR(c->barrier()->wait());
      auto start = clock_type::now();
      DTRAIN_RETURN_IF_ERROR(c->all_reduce(buf, comm::reduce_op::sum)->wait());
      double us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
      if (it >= 3)
        times.data()[it - 3] = static_cast<float>(us);
    }
    DTRAIN_RETURN_IF_ERROR(c->all_reduce(times, comm::reduce_op::max)->wait());
    auto v = times.to_vector();
    line += std::to_string(median(std::vector<double>(v.begin(), v.end()))) + " ";
  }
  if (rank == 0)
    DTRAIN_RETURN_IF_ERROR(store->set("result", comm::to_bytes(line)));
  return status::ok();
}

// Median microseconds per size, or empty on failure (printed).
std::vector<double> run_backend(const std::string& backend, int n, int iters_small,
                                int iters_big) {
  char tmpl[] = "/tmp/dtrain-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto outcomes = testing::run_ranks(n, testing::rank_mode::processes, std::chrono::seconds(300),
                                     [&](int rank) {
                                       return bench_rank(backend, rank, n, dir, iters_small,
                                                         iters_big);
                                     });
  std::vector<double> out;
  std::string failed = testing::failures(outcomes);
  if (!failed.empty()) {
    std::printf("%s N=%d failed:\n%s", backend.c_str(), n, failed.c_str());
  } else {
    auto files = rendezvous::file_store::open(dir).value();
    auto text = files->get(backend + std::to_string(n) + "/result", milliseconds(1000));
    std::string values = text ? comm::to_string(*text) : "";
    for (const char* p = values.c_str(); *p != 0;) {
      char* end = nullptr;
      out.push_back(std::strtod(p, &end));
      if (end == p)
        break;
      p = end;
    }
  }
  (void)!system(("rm -rf " + dir).c_str());
  return out;
}

// torch's median microseconds per size, keyed by N.
std::map<int, std::vector<double>> run_peer(const std::string& script, const std::vector<int>& ns) {
  std::string cmd = "/usr/bin/python3 " + script + " --nprocs";
  for (int n : ns)
    cmd += " " + std::to_string(n);
  std::map<int, std::vector<double>> out;
  std::regex header(R"(\[torch-gloo\] N=(\d+))"), row(R"(torch-allreduce\s+(\d+)\s+\d+\s+([0-9.]+))");
  int current = 0;
  dtrain::bench::for_each_output_line(cmd, [&](const char* line) {
    std::cmatch m;
    if (std::regex_search(line, m, header))
      current = std::stoi(m[1].str());
    else if (std::regex_search(line, m, row))
      out[current].push_back(std::stod(m[2].str()));
  });
  return out;
}

std::string size_name(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                            : std::to_string(bytes >> 10) + " KiB";
}

// Per size, the median over repeats of each repeat's median (0 where missing).
std::vector<double> median_over(const std::vector<std::vector<double>>& runs) {
  std::vector<double> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<double> cell;
    for (auto& run : runs)
      if (i < run.size() && run[i] > 0)
        cell.push_back(run[i]);
    out.push_back(median(cell));
  }
  return out;
}

void print_table(int n, const std::vector<std::string>& backends,
                 std::map<std::string, std::vector<double>>& ours, const std::vector<double>& torch,
                 double& worst_shm) {
  std::printf("\nN=%d  %-8s", n, "size");
  for (auto& b : backends)
    std::printf(" %16s %7s", (b + " us").c_str(), "GB/s");
  std::printf(" %12s %7s", "torch us", "GB/s");
  for (auto& b : backends)
    std::printf(" %12s", (b + "/torch").c_str());
  std::printf("\n");
  for (size_t i = 0; i < sizes.size(); ++i) {
    double bytes = static_cast<double>(sizes[i]), tus = torch.size() > i ? torch[i] : 0;
    std::printf("      %-8s", size_name(sizes[i]).c_str());
    for (auto& b : backends)
      std::printf(" %16.1f %7.3f", ours[b][i], ours[b][i] > 0 ? bytes / ours[b][i] / 1e3 : 0);
    std::printf(" %12.1f %7.3f", tus, tus > 0 ? bytes / tus / 1e3 : 0);
    for (auto& b : backends) {
      double ratio = ours[b][i] > 0 && tus > 0 ? tus / ours[b][i] : 0;
      std::printf(" %11.2fx", ratio);
      if (b == "shm" && n == 2 && sizes[i] >= (4 << 20) && ratio > 0)
        worst_shm = std::min(worst_shm, ratio);
    }
    std::printf("\n");
  }
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int> ns{2, 4};
  std::vector<std::string> backends{"shm", "gloo", "hierarchical"};
  std::string peer = DTRAIN_PEERS_DIR "/torch_allreduce.py";
  int iters_small = 50, iters_big = 10, repeats = 3;
  CLI::App app{"dtrain vs PyTorch gloo: all_reduce"};
  app.add_option("--nprocs", ns, "group sizes")->capture_default_str();
  app.add_option("--backends", backends, "dtrain CPU backends")->capture_default_str();
  app.add_option("--peer", peer, "torch_allreduce.py")->capture_default_str();
  app.add_option("--iters-small", iters_small)->capture_default_str();
  app.add_option("--iters-big", iters_big)->capture_default_str();
  app.add_option("--repeats", repeats, "interleaved repetitions (medians)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<double> copies;
  std::map<int, std::vector<std::vector<double>>> torch_runs;
  std::map<int, std::map<std::string, std::vector<std::vector<double>>>> our_runs;
  for (int r = 0; r < repeats; ++r) {
    copies.push_back(memcpy_gbps());
    for (auto& [n, row] : run_peer(peer, ns))
      torch_runs[n].push_back(row);
    for (int n : ns)
      for (auto& b : backends)
        our_runs[n][b].push_back(run_backend(b, n, iters_small, iters_big));
  }
  std::printf("memcpy 64 MiB (pre-faulted): %.2f GB/s, the physical limit of one copy\n",
              median(copies));
  std::printf("medians of %d interleaved repeats, each the median of its iterations\n", repeats);
  if (torch_runs.empty())
    std::printf("(peer unavailable: install it with tools/install-deps.sh --peers)\n");
  double worst_shm = 1e9;
  for (int n : ns) {
    std::map<std::string, std::vector<double>> ours;
    for (auto& b : backends)
      ours[b] = median_over(our_runs[n][b]);
    print_table(n, backends, ours, median_over(torch_runs[n]), worst_shm);
  }
  if (worst_shm < 1e9)
    std::printf("\nsummary: shm all_reduce at N=2 moves %.2fx the bandwidth of PyTorch's gloo "
                "at 4 and 64 MiB (worst of the two; goal >= 3)\n", worst_shm);
  return 0;
}
