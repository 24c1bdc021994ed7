// The CPU thread budget of replicas in node processes, read from /proc as
// the kernel sees it: OpenBLAS's pool threads (named "dtrain-blas" by the
// dtrain binary) that used CPU while a data-parallel epoch ran, plus the
// replicas' own training threads, against the host's cores.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "support/child_process.hpp"
#include "support/dtrain_command.hpp"
#include "support/loopback_cluster.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/trainer.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using std::chrono::milliseconds;

namespace {

namespace fs = std::filesystem;

struct task_time {
  std::string comm;
  long long ticks = 0;  // utime + stime, in clock ticks
};

// Every thread of process `pid`: its name and the CPU it has used.
std::map<std::string, task_time> tasks_of(int pid) {
  std::map<std::string, task_time> out;
  std::error_code ec;
  const fs::path dir = "/proc/" + std::to_string(pid) + "/task";
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    task_time t;
    std::ifstream(it->path() / "comm") >> t.comm;
    std::ifstream stat(it->path() / "stat");
    std::string line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
      continue;
    // After "(comm)": state, then fields 4..; utime and stime are 14 and 15.
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14)
        utime = std::atoll(field.c_str());
      if (i == 15)
        stime = std::atoll(field.c_str());
    }
    t.ticks = utime + stime;
    out[it->path().filename().string()] = t;
  }
  return out;
}

int named(int pid, const std::string& name) {
  int n = 0;
  for (const auto& [tid, t] : tasks_of(pid))
    n += t.comm == name;
  return n;
}

// OpenBLAS pool threads of the node processes that used at least a tenth
// of the window's CPU while an epoch of a 2-replica MLP (one replica per
// node) ran with `cpus_per_replica`.
int busy_blas_threads(loopback_cluster& lc, int cpus_per_replica) {
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)});
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  trainer_config cfg;
  cfg.name = "budget";
  cfg.operator_name = "mlp_classifier";
  cfg.config = {{"hidden", "1024,1024"},
                {"epochs", "1"},
                {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  cfg.num_replicas = 2;
  cfg.global_batch_size = 512;
  cfg.cpus_per_replica = cpus_per_replica;
  auto t = trainer::create(**c, cfg);
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  auto epoch = (*t)->train_async();
  std::this_thread::sleep_for(milliseconds(1500));  // under way, past its first GEMMs
  std::map<int, std::map<std::string, task_time>> before, after;
  for (auto& n : lc.nodes)
    before[n->pid()] = tasks_of(n->pid());
  const auto window = milliseconds(2000);
  std::this_thread::sleep_for(window);
  for (auto& n : lc.nodes)
    after[n->pid()] = tasks_of(n->pid());
  BOOST_TEST((epoch.wait_for(milliseconds(0)) != std::future_status::ready),
             "the epoch ended before the window did: the count saw an idle group");
  auto done = epoch.get();
  BOOST_REQUIRE_MESSAGE(done.is_ok(), done.error().to_string());
  BOOST_REQUIRE((*t)->shutdown().is_ok());
  const long long ticks_per_second = sysconf(_SC_CLK_TCK);
  const long long threshold = ticks_per_second * window.count() / 1000 / 10;
  int busy = 0;
  for (auto& [pid, tasks] : after)
    for (auto& [tid, t] : tasks) {
      if (t.comm != "dtrain-blas")
        continue;
      auto was = before[pid].find(tid);
      const long long used = t.ticks - (was == before[pid].end() ? 0 : was->second.ticks);
      BOOST_TEST_MESSAGE("pid " << pid << " thread " << tid << " used " << used << " ticks");
      busy += used >= threshold;
    }
  return busy;
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_budget)

BOOST_AUTO_TEST_CASE(node_processes_on_one_host_compute_with_at_most_its_cores) {
  if (cores() < 2) {
    BOOST_TEST_MESSAGE("SKIPPED (one core: OpenBLAS has no pool to count)");
    return;
  }
  loopback_cluster lc(2, 1);
  for (auto& n : lc.nodes)
    BOOST_TEST(named(n->pid(), "dtrain-blas") >= 1, "OpenBLAS's pool of node " << n->pid()
                                                    << " is not named: nothing would be counted");
  // Each replica's share: the host's cores over the 2 replicas on it. The
  // replicas' own threads take 2 of the cores, their pools the rest.
  const int shared = busy_blas_threads(lc, 0);
  BOOST_TEST_MESSAGE("shared: " << shared << " busy pool threads + 2 replicas on " << cores()
                                << " cores");
  BOOST_TEST(shared + 2 <= cores());
  // Asked for all the cores each, the two processes oversubscribe the
  // host, and the count sees it (the check above can fail).
  const int asked = busy_blas_threads(lc, cores());
  BOOST_TEST_MESSAGE("cpus_per_replica " << cores() << ": " << asked << " busy pool threads");
  BOOST_TEST(asked + 2 > cores());
}

BOOST_AUTO_TEST_CASE(a_nodes_cpus_cap_its_replicas_and_status_shows_them) {
  if (cores() < 2) {
    BOOST_TEST_MESSAGE("SKIPPED (one core: nothing to cap)");
    return;
  }
  loopback_cluster lc(0);
  lc.add_node(1, {"--cpus", "1"});
  lc.add_node(1, {"--cpus", "1"});
  auto status = dtrain::testing::run_dtrain({"status", "--address", lc.address},
                                            lc.home.file("status.log"), milliseconds(30000));
  BOOST_TEST(status.code == 0, status.log);
  BOOST_TEST(status.log.find("cpus 1\n") != std::string::npos, status.log);
  // A trainer asking for every core per replica gets one: its node's budget.
  const int capped = busy_blas_threads(lc, cores());
  BOOST_TEST(capped == 0);
}

BOOST_AUTO_TEST_SUITE_END()
