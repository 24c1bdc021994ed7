// dtrain-bench-scale: the control plane at scale, on one machine.
//
//   processes: a head and N one-slot node processes (N = 32, 64, 128):
//     time for all to join, the head's RSS and CPU, placement latency (here
//     and inside the head), status / `dtrain status` / dashboard latency,
//     the head's polls per second, and 10% of the nodes killed (SIGKILL)
//     or hung (SIGSTOP) at once: time to see them gone and to place around.
//   in-process: one head and N node actors in this process (up to 2,000):
//     the control plane alone, without processes or sockets.
//   sweep: a tune sweep of short trials (objective operator) over a
//     cluster of node processes: trials started and finished per second,
//     results per second, slots in use at the end, the head's and this
//     driver's memory per finished trial.
//
// A benchmark, not a test: it prints its figures (docs/scale.md reads them).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

#include <sqlite3.h>

#include "CLI/CLI.hpp"
#include "caf/all.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/system.hpp"
#include "dtrain/dtrain.hpp"
#include "head_client.hpp"
#include "process_cluster.hpp"
#include "support/http_client.hpp"

namespace {

using namespace dtrain;
using namespace dtrain::bench::scale;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty())
      out.push_back(std::stoi(item));
  return out;
}

int usable_nodes(const actors::cluster_status& s) { return static_cast<int>(s.nodes.size()); }

int slots_in_use(const actors::cluster_status& s) {
  return std::accumulate(s.slots_used.begin(), s.slots_used.end(), 0);
}

struct placement_figures {
  std::vector<double> rtt_ms;  // each place request, from here
  int failed = 0;
  double refused_ms = -1;      // one more placement on a full cluster: its time
  size_t refusal_chars = 0;    // and the length of the error it gets
};

// `count` one-slot placements: the cluster is filled trainer by trainer
// (so later placements search a fuller table), emptied, and filled again.
placement_figures measure_placements(head_client& c, int slots, int count, const std::string& tag) {
  placement_figures f;
  std::vector<std::string> held;
  for (int i = 0; i < count; ++i) {
    if (static_cast<int>(held.size()) == slots && f.refused_ms < 0) {
      // Full: what a trainer waiting for capacity gets, every 500 ms.
      const auto t0 = clock::now();
      auto refused = c.place(tag + "-waiting", 1);
      f.refused_ms = ms_since(t0);
      f.refusal_chars = refused ? 0 : refused.error().message().size();
    }
    if (static_cast<int>(held.size()) == slots) {
      for (auto& t : held)
        (void)c.release(t);
      held.clear();
    }
    const std::string id = tag + "-" + std::to_string(i);
    const auto t0 = clock::now();
    auto placed = c.place(id, 1);
    f.rtt_ms.push_back(ms_since(t0));
    if (placed)
      held.push_back(id);
    else
      ++f.failed;
  }
  for (auto& t : held)
    (void)c.release(t);
  return f;
}

// Kills (SIGKILL) or stops (SIGSTOP) `victims` at once; the time until the
// head lists `expect` usable nodes, and until a placement of all their
// slots succeeds (placed around the lost ones). -1: not within `timeout`.
std::pair<double, double> lose_nodes(head_client& c, const std::vector<pid_t>& victims, int sig,
                                     int expect, milliseconds timeout, const std::string& tag) {
  const auto t0 = clock::now();
  for (pid_t pid : victims)
    kill(pid, sig);
  double seen = c.wait_until([&](const actors::cluster_status& s) { return usable_nodes(s) == expect; },
                             timeout);
  double placed = -1;
  if (seen >= 0) {
    while (ms_since(t0) < static_cast<double>(timeout.count())) {
      if (c.place(tag, expect)) {
        placed = ms_since(t0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    (void)c.release(tag);
  }
  return {seen, placed};  // seen: from just after the signals
}

double median_of(std::vector<double> v) { return quantile(std::move(v), 0.5); }

// `dtrain status --address A` as a user runs it, `runs` times; the median ms.
double dtrain_status_ms(const process_cluster& cl, int runs) {
  std::vector<double> t;
  const std::string cmd = cl.binary() + " status --address " + cl.address() + " > " +
                          cl.file("status.out") + " 2>&1";
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    if (std::system(cmd.c_str()) != 0)
      return -1;
    t.push_back(ms_since(t0));
  }
  return median_of(t);
}

// GET /api/v1/cluster `runs` times; (median, 99th percentile) in ms.
std::pair<double, double> dashboard_ms(const process_cluster& cl, int runs) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    auto reply = testing::http_get(static_cast<uint16_t>(cl.dashboard_port()), "/api/v1/cluster",
                                   cl.dashboard_token());
    if (reply.status != 200)
      return {-1, -1};
    t.push_back(ms_since(t0));
  }
  return {median_of(t), quantile(t, 0.99)};
}

// The logs of up to `most` node processes that never said they joined.
void print_unjoined_logs(const process_cluster& cl, int most) {
  for (size_t i = 0; i < cl.node_pids().size() && most > 0; ++i) {
    std::ifstream log(cl.file("node" + std::to_string(i) + ".log"));
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    if (text.find(" joined ") != std::string::npos)
      continue;
    --most;
    std::fprintf(stderr, "node%zu (pid %d) did not join; its log:\n%s\n", i, cl.node_pids()[i],
                 text.substr(0, 2000).c_str());
  }
}

struct idle_figures {
  double polls_per_s = -1;  // the head's polls to nodes
  double cpu_pct = -1;      // of process `pid`'s, when given
};

// Six idle seconds: the head's polls per second (its own counter) and the
// CPU of process `pid` (-1: none to read).
idle_figures measure_idle(head_client& c, pid_t pid) {
  idle_figures f;
  auto before = c.status();
  const double cpu0 = pid > 0 ? cpu_seconds(pid) : 0;
  const auto t0 = clock::now();
  std::this_thread::sleep_for(seconds(6));
  auto after = c.status();
  const double elapsed = ms_since(t0) / 1000;
  if (pid > 0)
    f.cpu_pct = 100 * (cpu_seconds(pid) - cpu0) / elapsed;
  if (before && after)
    f.polls_per_s = static_cast<double>(after->load.node_polls - before->load.node_polls) / elapsed;
  return f;
}

// The median of `runs` status requests, in ms.
double status_ms(head_client& c, int runs) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    (void)c.status();
    t.push_back(ms_since(t0));
  }
  return quantile(t, 0.5);
}

int run_processes(int n, int placements) {
  process_cluster cl("dtrain-scale");
  if (status s = cl.start_head(true); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  auto attached = attached_client::attach(cl.address());
  if (!attached)
    return 1;
  head_client& c = attached->client();
  const pid_t hp = cl.head_pid();
  const int64_t rss0 = rss_bytes(hp);

  const auto t0 = clock::now();
  cl.start_nodes(n);
  double half = -1, most = -1;  // when half and 90% had joined
  double joined = c.wait_until(
      [&](const actors::cluster_status& s) {
        if (half < 0 && usable_nodes(s) * 2 >= n)
          half = ms_since(t0);
        if (most < 0 && usable_nodes(s) * 10 >= n * 9)
          most = ms_since(t0);
        return usable_nodes(s) == n;
      },
      seconds(120), milliseconds(20));
  if (joined < 0) {
    auto s = c.status();
    std::fprintf(stderr, "error: %d nodes joined of %d within 120 s\n", s ? usable_nodes(*s) : -1, n);
    print_unjoined_logs(cl, 3);
    return 1;
  }
  joined = ms_since(t0);
  int retried = 0;  // nodes that asked the head again (node.cpp: join_head)
  for (size_t i = 0; i < cl.node_pids().size(); ++i) {
    std::ifstream log(cl.file("node" + std::to_string(i) + ".log"));
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    retried += text.find("asking again") != std::string::npos;
  }
  std::this_thread::sleep_for(seconds(2));  // the nodes' own start-up CPU is over

  // Idle: what N nodes cost the head with nothing running.
  const idle_figures idle = measure_idle(c, hp);
  const int64_t rss_joined = rss_bytes(hp);

  auto places = measure_placements(c, n, placements, "p");
  auto load = c.status();
  const double over_caf = status_ms(c, 20);
  const double cli_ms = dtrain_status_ms(cl, 3);
  const auto [dash_p50, dash_p99] = dashboard_ms(cl, 20);

  // 10% killed at once, then another 10% hung.
  const int k = std::max(1, n / 10);
  std::vector<pid_t> pids = cl.node_pids();
  std::mt19937 rng(7);
  std::shuffle(pids.begin(), pids.end(), rng);
  std::vector<pid_t> killed(pids.begin(), pids.begin() + k);
  std::vector<pid_t> hung(pids.begin() + k, pids.begin() + 2 * k);
  const auto timeout = actors::hang_timeout() * 3;
  auto [kill_seen, kill_placed] = lose_nodes(c, killed, SIGKILL, n - k, timeout, "around-kill");
  auto [hang_seen, hang_placed] = lose_nodes(c, hung, SIGSTOP, n - 2 * k, timeout, "around-hang");

  std::printf("processes %4d | join %6.2f s (half %.2f, 90%% %.2f; %d asked again) | head RSS %6.1f MiB (%+.1f) CPU idle %5.1f%% | "
              "polls %6.1f/s | place p50 %.3f p99 %.3f ms (head %.3f / %.3f, %d failed) | "
              "full: refused in %.3f ms, %zu chars | status %.2f ms, `dtrain status` %.0f ms, dashboard p50 %.2f p99 %.2f ms | "
              "kill %d: seen %.0f ms, placed %.0f ms | hang %d: seen %.0f ms, placed %.0f ms "
              "(hang timeout %lld ms)\n",
              n, joined / 1000, half / 1000, most / 1000, retried,
              static_cast<double>(rss_joined) / (1 << 20),
              static_cast<double>(rss_joined - rss0) / (1 << 20), idle.cpu_pct, idle.polls_per_s,
              quantile(places.rtt_ms, 0.5), quantile(places.rtt_ms, 0.99),
              load ? load->load.place_p50_ms : -1, load ? load->load.place_p99_ms : -1,
              places.failed, places.refused_ms, places.refusal_chars, over_caf, cli_ms, dash_p50, dash_p99, k, kill_seen,
              kill_placed, k, hang_seen, hang_placed,
              static_cast<long long>(actors::hang_timeout().count()));
  std::fflush(stdout);
  return 0;
}

int run_in_process(int n, int placements) {
  actors::system_config cfg;
  caf::actor_system sys{cfg};
  auto spawned = actors::spawn_head(sys);
  head_client c(sys, spawned.head, spawned.session);
  const int64_t rss0 = rss_bytes(getpid());
  std::vector<actors::node_actor> nodes;
  nodes.reserve(static_cast<size_t>(n));
  const auto t0 = clock::now();
  {
    caf::scoped_actor self{sys};
    for (int i = 0; i < n; ++i) {
      auto node = actors::spawn_node(sys);
      actors::node_info info;
      info.host = "sim" + std::to_string(i);
      info.address = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":7000";
      info.cpu_slots = 1;
      info.pid = 100000 + i;
      info.host_id = info.host;
      info.cpus = 1;
      bool ok = false;
      self->request(spawned.head, seconds(10), actors::register_atom::value, info, node,
                    spawned.session)
          .receive([&](int32_t) { ok = true; }, [&](caf::error&) {});
      if (!ok) {
        std::fprintf(stderr, "error: node %d did not register\n", i);
        return 1;
      }
      nodes.push_back(node);
    }
  }
  const double registered = ms_since(t0);
  const idle_figures idle = measure_idle(c, -1);
  auto places = measure_placements(c, n, placements, "p");
  auto load = c.status();
  const double over_caf = status_ms(c, 20);
  const int k = std::max(1, n / 10);
  const auto k0 = clock::now();
  for (int i = 0; i < k; ++i)
    caf::anon_send_exit(nodes[static_cast<size_t>(i * 10)], caf::exit_reason::kill);
  double seen = c.wait_until([&](const actors::cluster_status& s) { return usable_nodes(s) == n - k; },
                             seconds(30), milliseconds(1));
  double placed = -1;
  if (seen >= 0 && c.place("around", n - k))
    placed = ms_since(k0);
  std::printf("in-process %5d | register %7.1f ms | RSS %+7.1f MiB | polls %7.1f/s | place p50 "
              "%.3f p99 %.3f ms (head %.3f / %.3f, %d failed) | full: refused in %.3f ms, %zu chars | status %.2f ms | kill %d: seen "
              "%.1f ms, placed %.1f ms\n",
              n, registered, static_cast<double>(rss_bytes(getpid()) - rss0) / (1 << 20),
              idle.polls_per_s, quantile(places.rtt_ms, 0.5), quantile(places.rtt_ms, 0.99),
              load ? load->load.place_p50_ms : -1, load ? load->load.place_p99_ms : -1,
              places.failed, places.refused_ms, places.refusal_chars, over_caf, k, seen,
              placed);
  std::fflush(stdout);
  for (auto& node : nodes)
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(spawned.head, caf::exit_reason::user_shutdown);
  return 0;
}

// A read-only view of the head's store (its SQLite file, in WAL mode:
// reading while the head writes is fine). Counts are -1 when unreadable.
class store_reader {
public:
  explicit store_reader(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
    }
  }
  ~store_reader() { sqlite3_close(db_); }
  store_reader(const store_reader&) = delete;
  store_reader& operator=(const store_reader&) = delete;

  int64_t count(const std::string& sql) { 
    const auto v = column(sql);
    return v.empty() ? -1 : static_cast<int64_t>(v[0]);
  }
  /// The first column of every row of `sql`, as numbers.
  std::vector<double> column(const std::string& sql) {
    std::vector<double> out;
    sqlite3_stmt* st = nullptr;
    if (db_ != nullptr && sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW)
        out.push_back(sqlite3_column_double(st, 0));
    sqlite3_finalize(st);
    return out;
  }

private:
  sqlite3* db_ = nullptr;
};

struct sweep_options {
  int trials = 2000;
  int nodes = 64;
  int concurrent = 64;
  int epochs = 3;
};

// Trials per second between the 10th and the 90th percentile of `at`
// (sorted times in seconds): the sustained rate, without ramp-up and tail.
double sustained_rate(const std::vector<double>& at) {
  if (at.size() < 10)
    return 0;
  const size_t a = at.size() / 10, b = at.size() * 9 / 10;
  return at[b] > at[a] ? static_cast<double>(b - a) / (at[b] - at[a]) : 0;
}

// A sweep as a user runs it: `dtrain tune FILE --address HEAD` against a
// cluster of node processes; the trials' times and reports are read from
// the head's store, the head's and the driver's memory sampled as it runs.
int run_sweep(const sweep_options& o) {
  process_cluster cl("dtrain-scale-sweep");
  if (status s = cl.start_head(false); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  cl.start_nodes(o.nodes);
  {
    auto attached = attached_client::attach(cl.address());
    if (!attached)
      return 1;
    if (attached->client().wait_until([&](const actors::cluster_status& s) { return usable_nodes(s) == o.nodes; },
                     seconds(120), milliseconds(50)) < 0) {
      std::fprintf(stderr, "error: the %d nodes did not join within 120 s\n", o.nodes);
      return 1;
    }
  }
  const std::string file = cl.file("sweep.yaml");
  {
    std::ofstream yaml(file);
    yaml << "name: scale-sweep\noperator: objective\nhyperparameters:\n  function: branin\n"
         << "  x1: {type: double, minval: -5, maxval: 10}\n"
         << "  x2: {type: double, minval: 0, maxval: 15}\n"
         << "searcher:\n  name: random\n  metric: validation_loss\n  max_trials: " << o.trials
         << "\n  max_concurrent_trials: " << o.concurrent << "\nglobal_batch_size: 1\nepochs: "
         << o.epochs << "\n";
  }
  struct sample {
    double at;
    int64_t head, driver, ended;
    int driver_sockets;
  };
  std::vector<sample> samples;
  const auto t0 = clock::now();
  pid_t driver = fork();
  if (driver == 0) {
    std::FILE* out = std::freopen(cl.file("tune.log").c_str(), "w", stdout);
    if (out != nullptr)
      dup2(fileno(out), STDERR_FILENO);
    execl(cl.binary().c_str(), cl.binary().c_str(), "tune", file.c_str(), "--address",
          cl.address().c_str(), "--verbosity", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  int code = -1;
  {
    for (;;) {
      // Opened each time: the head creates its store on the sweep's first write.
      store_reader live(cl.file("experiments.db"));
      int wstatus = 0;
      if (waitpid(driver, &wstatus, WNOHANG) == driver) {
        code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
        break;
      }
      if (ms_since(t0) > 600000) {
        kill(driver, SIGKILL);
        waitpid(driver, nullptr, 0);
        break;
      }
      samples.push_back({ms_since(t0) / 1000, rss_bytes(cl.head_pid()), rss_bytes(driver),
                         live.count("SELECT count(*) FROM trials WHERE ended_at IS NOT NULL"),
                         socket_count(driver)});
      std::this_thread::sleep_for(milliseconds(250));
    }
  }
  const double wall = ms_since(t0) / 1000;
  if (code != 0) {
    std::fprintf(stderr, "error: dtrain tune exited with %d; see %s\n", code,
                 cl.file("tune.log").c_str());
    return 1;
  }
  store_reader store(cl.file("experiments.db"));
  std::vector<double> starts = store.column("SELECT started_at FROM trials WHERE started_at IS NOT NULL ORDER BY started_at");
  std::vector<double> ends = store.column("SELECT ended_at FROM trials WHERE ended_at IS NOT NULL ORDER BY ended_at");
  const int64_t reports = store.count("SELECT count(*) FROM metrics WHERE name = 'validation_loss'");
  const int64_t errored = store.count("SELECT count(*) FROM trials WHERE state = 'error'");
  const int64_t trials = store.count("SELECT count(*) FROM trials");
  // Memory per 1,000 finished trials: from the first sample past a quarter
  // of the trials to the last one that the store had counted.
  double head_growth = 0, driver_growth = 0;
  const sample* first = nullptr;
  const sample* last = nullptr;
  for (const sample& sm : samples) {
    if (sm.head < 0 || sm.driver < 0 || sm.ended < 0)
      continue;
    if (first == nullptr && sm.ended >= o.trials / 4)
      first = &sm;
    last = &sm;
  }
  if (first != nullptr && last != nullptr && last->ended > first->ended) {
    const double k = static_cast<double>(last->ended - first->ended) / 1000;
    head_growth = static_cast<double>(last->head - first->head) / (1 << 20) / k;
    driver_growth = static_cast<double>(last->driver - first->driver) / (1 << 20) / k;
  }
  // Slot turnaround, the tuner's loop end to end: from the end that freed
  // a slot (the i-th end) to the group of the trial that took it ready
  // (the (i + concurrent)-th start): the tuner hears the end, asks the
  // searcher, places, spawns the replica and sets it up.
  std::vector<double> turnaround_ms;
  for (size_t i = static_cast<size_t>(o.concurrent); i < starts.size(); ++i)
    if (i - static_cast<size_t>(o.concurrent) < ends.size())
      turnaround_ms.push_back(1000 * (starts[i] - ends[i - static_cast<size_t>(o.concurrent)]));
  int sockets = 0;  // the driver's most at once: its fan-out to the nodes
  for (const sample& sm : samples)
    sockets = std::max(sockets, sm.driver_sockets);
  int in_use = -1;
  if (auto attached = attached_client::attach(cl.address()))
    if (auto s = attached->client().status())
      in_use = slots_in_use(*s);
  std::printf("sweep %d trials x %d epochs on %d nodes, %d at a time (dtrain tune) | %.1f s | "
              "store: %lld trials, %lld errored, %lld reports | starts %.1f/s, ends %.1f/s "
              "(10th-90th percentile), slot turnaround p50 %.1f p99 %.1f ms | %.0f reports/s into "
              "the store | slots in use after: %d | "
              "head RSS %.1f MiB (%+.2f MiB per 1,000 trials) | driver RSS %.1f MiB (%+.2f MiB "
              "per 1,000 trials), %d sockets at most\n",
              o.trials, o.epochs, o.nodes, o.concurrent, wall, static_cast<long long>(trials),
              static_cast<long long>(errored), static_cast<long long>(reports),
              sustained_rate(starts), sustained_rate(ends), quantile(turnaround_ms, 0.5),
              quantile(turnaround_ms, 0.99), static_cast<double>(reports) / wall,
              in_use, last ? static_cast<double>(last->head) / (1 << 20) : -1.0, head_growth,
              last ? static_cast<double>(last->driver) / (1 << 20) : -1.0, driver_growth, sockets);
  std::fflush(stdout);
  const bool whole = trials == o.trials && reports == int64_t{o.trials} * o.epochs && errored == 0;
  return in_use == 0 && whole ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain's control plane at scale: node processes, in-process nodes, a sweep"};
  std::string processes = "32,64,128", in_process = "500,1000,2000";
  int placements = 1000;
  bool sweep = false;
  sweep_options so;
  app.add_option("--processes", processes, "node process counts (comma separated; '' none)");
  app.add_option("--in-process", in_process, "in-process node counts ('' none)");
  app.add_option("--placements", placements, "one-slot placements timed per size");
  app.add_flag("--sweep", sweep, "also run the tune sweep");
  app.add_option("--sweep-trials", so.trials, "trials in the sweep");
  app.add_option("--sweep-nodes", so.nodes, "node processes under the sweep");
  app.add_option("--concurrent", so.concurrent, "trials at a time");
  app.add_option("--epochs", so.epochs, "epochs per trial");
  CLI11_PARSE(app, argc, argv);
  int rc = 0;
  for (int n : parse_sizes(in_process))
    rc |= run_in_process(n, placements);
  for (int n : parse_sizes(processes))
    rc |= run_processes(n, placements);
  if (sweep)
    rc |= run_sweep(so);
  return rc;
}
