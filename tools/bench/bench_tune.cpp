// The tuner's own cost (not training's), on an embedded cluster, with the
// peers' figures in the same table:
//   a. results ingested per second by the tuner actor: 64 scripted trials
//      reporting as fast as it answers (FIFO and ASHA); Ray Tune's documented
//      ~1,000/s one node, ~500/s cluster for reference;
//   b. the gap from a trial's slot coming free to the next trial's replicas
//      being ready (20 real noop trainer groups of 1 epoch, one slot), and
//      trainer::create alone for the same operator, so that the tuner's own
//      share is visible;
//   c. 200 short noop trials (2 epochs of ~50-100 ms) through the tuner
//      against the same trials run back to back by hand (Ray's release test:
//      +14%);
//   d. Optuna 3.1's cost per trial (in memory and SQLite), run here.
//
//   build/bin/dtrain-bench-tune [--trials 200] [--repeats 3] [--samples N] [--quick]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "support/scripted_trials.hpp"
#include "bench_util.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/experiments/store.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

tune_config quiet(int64_t samples, int64_t epochs, int concurrent, const std::string& scheduler) {
  tune_config c;
  c.experiment = "bench";
  c.num_samples = samples;
  c.max_epochs = epochs;
  c.max_concurrent_trials = concurrent;
  c.scheduler = scheduler;
  c.asha.grace_period = 1;
  c.asha.reduction_factor = 2;
  c.verbosity = 0;
  return c;
}

// Reports per second through the tuner actor (each report is a request the
// tuner answers before the scripted runner sends the next).
// With `store_dir` set, the sweep records itself in an SQLite experiment
// store there (every report: 4 metric rows and the trial's row), and the
// time includes flushing it at the end.
double ingest_rate(cluster& c, const std::string& scheduler, int trials, int64_t epochs,
                   const std::string& store_dir = "") {
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("b", tune::uniform(0.0, 0.2));
  trainer_config t;
  t.operator_name = "scripted";
  tune_config config = quiet(trials, epochs, trials, scheduler);
  if (!store_dir.empty()) {
    auto opened = experiments::open_sqlite_store(store_dir + "/experiments.db");
    if (!opened) {
      std::fprintf(stderr, "error: %s\n", opened.error().to_string().c_str());
      return 0;
    }
    config.store = std::move(*opened);
    experiments::experiment_row e;
    e.name = "bench";
    e.kind = "tune";
    auto id = config.store->create_experiment(e);
    if (!id) {
      std::fprintf(stderr, "error: %s\n", id.error().to_string().c_str());
      return 0;
    }
    config.experiment_id = *id;
  }
  tuner sweep(c, t, s, config);
  auto n = std::make_shared<testing::launch_counters>();
  sweep.set_launcher(testing::scripted_trials(n));
  auto start = clock_type::now();
  auto g = sweep.fit();
  double took = seconds_since(start);
  if (!g) {
    std::fprintf(stderr, "error: %s\n", g.error().to_string().c_str());
    return 0;
  }
  return n->epochs.load() / took;
}

trainer_config noop(int64_t samples) {
  trainer_config t;
  t.operator_name = "noop";
  t.config = {{"samples", std::to_string(samples)}};
  t.num_replicas = 1;
  t.global_batch_size = 64;
  return t;
}

struct sweep_timing {
  double wall = 0;           // fit(), s
  std::vector<double> gaps;  // next started_at - previous ended_at, ms
  double first_up = 0;       // fit() called -> the first trial's group ready, s
  double running = 0;        // sum of ended_at - started_at (epochs and shutdown), s
  double last_end = 0;       // the last trial's ended_at, s
};

// A FIFO sweep of noop trials, one at a time.
sweep_timing noop_sweep(cluster& c, int trials, int64_t epochs, int64_t samples) {
  tune::space s;
  s.add("lr", tune::constant(0.0));
  tuner sweep(c, noop(samples), s, quiet(trials, epochs, 1, "fifo"));
  sweep_timing out;
  auto start = clock_type::now();
  auto g = sweep.fit();
  out.wall = seconds_since(start);
  if (!g) {
    std::fprintf(stderr, "error: %s\n", g.error().to_string().c_str());
    return out;
  }
  for (size_t i = 1; i < g->trials.size(); ++i)
    out.gaps.push_back(1000.0 * (g->trials[i].started_at - g->trials[i - 1].ended_at));
  for (const auto& t : g->trials)
    out.running += t.ended_at - t.started_at;
  out.first_up = g->trials.empty() ? 0 : g->trials.front().started_at;
  out.last_end = g->trials.empty() ? 0 : g->trials.back().ended_at;
  return out;
}

struct by_hand_timing {
  double wall = 0;                // s
  std::vector<double> create_ms;  // trainer::create per trial
  std::vector<double> epoch_ms;   // train + validate per epoch
  double running = 0;             // sum of epochs and shutdown, as the tuner's running, s
};

// The same trials without a tuner: create, train and validate per epoch,
// shut down, one after the other.
by_hand_timing noop_by_hand(cluster& c, int trials, int64_t epochs, int64_t samples) {
  by_hand_timing out;
  auto start = clock_type::now();
  for (int i = 0; i < trials; ++i) {
    const auto made = clock_type::now();
    auto t = trainer::create(c, noop(samples));
    if (!t) {
      std::fprintf(stderr, "error: %s\n", t.error().to_string().c_str());
      return out;
    }
    out.create_ms.push_back(1000.0 * seconds_since(made));
    const auto up = clock_type::now();
    for (int64_t e = 0; e < epochs; ++e) {
      auto began = clock_type::now();
      auto m = (*t)->train();
      auto v = (*t)->validate();
      if (!m || !v) {
        std::fprintf(stderr, "error: %s\n", (!m ? m.error() : v.error()).to_string().c_str());
        return out;
      }
      out.epoch_ms.push_back(1000.0 * seconds_since(began));
    }
    (void)(*t)->shutdown();
    out.running += seconds_since(up);
  }
  out.wall = seconds_since(start);
  return out;
}

struct optuna_costs {
  std::string skipped;  // why, when it did not run
  double in_memory_ms = 0, sqlite_ms = 0;
  int trials = 0;
};

// tools/reference/optuna_trial_cost.py through /usr/bin/python3.
optuna_costs optuna_trial_cost(int trials) {
  optuna_costs out;
  std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/reference/optuna_trial_cost.py";
  bool ran = bench::for_each_output_line(
      "/usr/bin/python3 " + script + " " + std::to_string(trials), [&](const char* line) {
        char storage[32];
        double ms = 0;
        if (std::sscanf(line, "%31s %d trials: %lf ms/trial", storage, &out.trials, &ms) == 3)
          (std::string(storage) == "sqlite" ? out.sqlite_ms : out.in_memory_ms) = ms;
        else if (std::strncmp(line, "skipped: ", 9) == 0 || std::strstr(line, "rror") != nullptr)
          out.skipped += std::string(line).substr(0, std::strcspn(line, "\n")) + " ";
      });
  if (!ran)
    out.skipped = "could not start /usr/bin/python3";
  else if (out.in_memory_ms == 0 && out.skipped.empty())
    out.skipped = "no figures from " + script + " (is /usr/bin/python3 installed?)";
  return out;
}

void row(const char* what, const std::string& dtrain, const std::string& reference) {
  std::printf("%-58s %16s  %s\n", what, dtrain.c_str(), reference.c_str());
}

std::string format(const char* f, double a, double b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench-tune: the tuner's own cost, against Ray Tune's and Optuna's"};
  int trials = 200, repeats = 3, gap_trials = 20, ingest_trials = 64, optuna_trials = 500;
  int64_t samples = 350000, gap_samples = 1000, ingest_epochs = 2000;
  bool quick = false;
  app.add_option("--trials", trials, "noop trials in the overhead sweep (c)")->capture_default_str();
  app.add_option("--samples", samples, "noop samples per epoch in (c)")->capture_default_str();
  app.add_option("--gap-trials", gap_trials, "noop trials of 1 epoch in (b)")->capture_default_str();
  app.add_option("--gap-samples", gap_samples, "noop samples per epoch in (b)")
      ->capture_default_str();
  app.add_option("--ingest-epochs", ingest_epochs, "epochs of each scripted trial in (a)")
      ->capture_default_str();
  app.add_option("--optuna-trials", optuna_trials, "Optuna trials per storage (d)")
      ->capture_default_str();
  app.add_option("--repeats", repeats, "repeats (medians are printed)")->capture_default_str();
  app.add_flag("--quick", quick, "1 repeat, 50 trials in (c), 200 Optuna trials");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    repeats = 1;
    trials = std::min(trials, 50);
    optuna_trials = std::min(optuna_trials, 200);
  }

  // a. Results ingested per second, on 64 slots so that every trial runs at once.
  cluster::options o;
  o.local_slots = ingest_trials;
  auto big = cluster::connect(o);
  if (!big) {
    std::fprintf(stderr, "error: %s\n", big.error().to_string().c_str());
    return 1;
  }
  std::vector<double> fifo, asha, asha_stored;
  for (int r = 0; r < repeats; ++r) {
    fifo.push_back(ingest_rate(**big, "fifo", ingest_trials, ingest_epochs));
    asha.push_back(ingest_rate(**big, "asha", ingest_trials, ingest_epochs));
    char dir[] = "/tmp/dtrain-bench-store-XXXXXX";
    if (mkdtemp(dir) != nullptr) {
      asha_stored.push_back(ingest_rate(**big, "asha", ingest_trials, ingest_epochs, dir));
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
  big->reset();

  // b and c on one slot: one trial at a time, interleaved with the by-hand runs.
  o.local_slots = 1;
  auto one = cluster::connect(o);
  if (!one) {
    std::fprintf(stderr, "error: %s\n", one.error().to_string().c_str());
    return 1;
  }
  std::vector<double> gaps, create_ms, tuned, by_hand, epoch_ms, overheads, launch_ms, run_ms,
      tail_ms;
  for (int r = 0; r < repeats; ++r) {
    sweep_timing g = noop_sweep(**one, gap_trials, 1, gap_samples);
    gaps.insert(gaps.end(), g.gaps.begin(), g.gaps.end());
    by_hand_timing c = noop_by_hand(**one, gap_trials, 1, gap_samples);
    create_ms.insert(create_ms.end(), c.create_ms.begin(), c.create_ms.end());
  }
  const int64_t epochs = 2;
  for (int r = 0; r < repeats; ++r) {
    sweep_timing s = noop_sweep(**one, trials, epochs, samples);
    tuned.push_back(s.wall);
    by_hand_timing h = noop_by_hand(**one, trials, epochs, samples);
    by_hand.push_back(h.wall);
    epoch_ms.insert(epoch_ms.end(), h.epoch_ms.begin(), h.epoch_ms.end());
    overheads.push_back(h.wall > 0 ? 100.0 * (s.wall - h.wall) / h.wall : 0);
    // Where the difference goes, per trial (sums, so that the three add up
    // to the wall-time difference): launching (the first trial's start and
    // the gaps, less the creates by hand), running (epochs, reports and
    // shutdown, less the same by hand), and fit() returning after the last.
    double gap_sum = 0, create_sum = 0;
    for (double g : s.gaps)
      gap_sum += g;
    for (double c : h.create_ms)
      create_sum += c;
    const double n = std::max(trials, 1);
    launch_ms.push_back((1000.0 * s.first_up + gap_sum - create_sum) / n);
    run_ms.push_back(1000.0 * (s.running - h.running) / n);
    tail_ms.push_back(1000.0 * (s.wall - s.last_end) / n);
  }
  one->reset();

  // d. Optuna's cost per trial on this machine, now.
  optuna_costs optuna = optuna_trial_cost(optuna_trials);

  const double t = bench::median(tuned), h = bench::median(by_hand);
  const double overhead = h > 0 ? 100.0 * (t - h) / h : 0;
  const double per_trial_ms = trials > 0 ? 1000.0 * (t - h) / trials : 0;
  char what[128];
  std::printf("\n");
  row(("what (medians of " + std::to_string(repeats) + " repeats)").c_str(), "dtrain",
      "reference, goal");
  std::snprintf(what, sizeof what, "a. results ingested per second, FIFO, %d trials x %lld ep",
                ingest_trials, static_cast<long long>(ingest_epochs));
  row(what, format("%.0f /s", bench::median(fifo)),
      "goal >= 10,000/s; Ray Tune ~1,000/s one node, ~500/s cluster");
  row("   same, ASHA (grace 1, rf 2)", format("%.0f /s", bench::median(asha)), "");
  row("   same, ASHA, recorded in the SQLite experiment store", format("%.0f /s", bench::median(asha_stored)),
      "Ray: 232 of 366 s writing state (ray#11233)");
  std::snprintf(what, sizeof what, "b. slot free -> next trial ready, %d noop x 1 ep (%lld)",
                gap_trials, static_cast<long long>(gap_samples));
  row(what, format("%.1f ms", bench::median(gaps)),
      format("goal <= 100 ms; max %.1f ms", max_of(gaps)));
  row("   of which trainer::create (placement + replica setup)",
      format("%.1f ms", bench::median(create_ms)),
      format("by hand, same operator; max %.1f ms", max_of(create_ms)));
  row("   the tuner's own share", format("%.1f ms", bench::median(gaps) - bench::median(create_ms)),
      "");
  std::snprintf(what, sizeof what, "c. %d noop trials x %lld ep (%.0f ms/ep): tuner / by hand",
                trials, static_cast<long long>(epochs), bench::median(epoch_ms));
  row(what, format("%.2f / %.2f s", t, h), "");
  row("   sweep overhead", format("%+.1f %%", overhead),
      "goal <= 5%; Ray release test +14% (715 s vs 625 s)");
  std::string spread;
  for (double o : overheads)
    spread += format(" %+.1f%%", o);
  row("   per repeat (noop epochs drift with the machine's load)", "", spread.substr(1));
  row("   per trial, tuner - by hand: launching (gaps - creates)",
      format("%+.2f ms", bench::median(launch_ms)), "");
  row("   per trial, tuner - by hand: running (epochs, shutdown)",
      format("%+.2f ms", bench::median(run_ms)), "");
  row("   per trial: fit() returning after the last trial", format("%+.2f ms", bench::median(tail_ms)),
      "");
  row("d. cost per trial: dtrain tuner (c's overhead / trials)", format("%.2f ms", per_trial_ms),
      "");
  if (optuna.skipped.empty()) {
    std::snprintf(what, sizeof what, "   Optuna 3.1, in memory, %d trials, 10 reports + SHA",
                  optuna.trials);
    row(what, "", format("%.2f ms/trial", optuna.in_memory_ms));
    std::snprintf(what, sizeof what, "   Optuna 3.1, SQLite file, %d trials, 10 reports + SHA",
                  optuna.trials);
    row(what, "", format("%.2f ms/trial", optuna.sqlite_ms));
  } else {
    row("   Optuna", "", "skipped: " + optuna.skipped);
  }
  std::printf("summary: %.0f results/s ingested (Ray ~1,000/s); %.1f ms slot-to-ready "
              "(%.1f ms trainer::create); %+.1f%% sweep overhead (Ray +14%%)",
              bench::median(fifo), bench::median(gaps), bench::median(create_ms), overhead);
  if (optuna.skipped.empty())
    std::printf("; %.2f ms/trial tuner vs Optuna %.2f in memory, %.2f SQLite", per_trial_ms,
                optuna.in_memory_ms, optuna.sqlite_ms);
  std::printf("\n");
  return 0;
}
