// The tuner's own cost (not training's), on an embedded cluster:
//   1. results ingested per second by the tuner actor (scripted trials
//      reporting as fast as it answers; FIFO and ASHA);
//   2. the gap between a trial's slots coming free and the next trial's
//      replicas being ready (real trainer groups of the noop operator);
//   3. 200 short noop trials through the tuner against the same trials run
//      back to back by hand;
//   4. Optuna 3.1's cost per trial (in memory and SQLite), run here.
//
//   build/bin/dtrain-bench-tune [--trials 200] [--repeats 3]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

#include "actors/scripted_trials.hpp"
#include "bench_util.hpp"
#include "dtrain/actors/tuner/tuner.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
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

// Reports per second through the tuner actor.
double ingest_rate(cluster& c, const std::string& scheduler, int trials, int64_t epochs) {
  tune::space s;
  s.add("a", tune::uniform(0.5, 0.9)).add("b", tune::uniform(0.0, 0.2));
  trainer_config t;
  t.operator_name = "scripted";
  tuner sweep(c, t, s, quiet(trials, epochs, trials, scheduler));
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
  double wall = 0;
  std::vector<double> gaps;  // next started_at - previous ended_at, ms
};

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
  return out;
}

// The same trials without a tuner: create, train and validate per epoch,
// shut down, one after the other.
double noop_by_hand(cluster& c, int trials, int64_t epochs, int64_t samples,
                    std::vector<double>* create_ms) {
  auto start = clock_type::now();
  for (int i = 0; i < trials; ++i) {
    auto made = clock_type::now();
    auto t = trainer::create(c, noop(samples));
    if (!t) {
      std::fprintf(stderr, "error: %s\n", t.error().to_string().c_str());
      return 0;
    }
    create_ms->push_back(1000.0 * seconds_since(made));
    for (int64_t e = 0; e < epochs; ++e) {
      auto m = (*t)->train();
      auto v = (*t)->validate();
      if (!m || !v)
        return 0;
    }
    (void)(*t)->shutdown();
  }
  return seconds_since(start);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench-tune: the tuner's own cost"};
  int trials = 200, repeats = 3;
  int64_t samples = 20000;
  app.add_option("--trials", trials, "noop trials in the overhead sweep")->capture_default_str();
  app.add_option("--repeats", repeats, "repeats (medians are printed)")->capture_default_str();
  app.add_option("--samples", samples, "noop samples per epoch")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  cluster::options o;
  o.local_slots = 64;
  auto big = cluster::connect(o);
  if (!big) {
    std::fprintf(stderr, "error: %s\n", big.error().to_string().c_str());
    return 1;
  }
  std::vector<double> fifo, asha;
  for (int r = 0; r < repeats; ++r) {
    fifo.push_back(ingest_rate(**big, "fifo", 64, 2000));
    asha.push_back(ingest_rate(**big, "asha", 64, 2000));
  }
  big->reset();

  o.local_slots = 1;
  auto one = cluster::connect(o);
  if (!one) {
    std::fprintf(stderr, "error: %s\n", one.error().to_string().c_str());
    return 1;
  }
  const int64_t epochs = 2;
  std::vector<double> tuned, by_hand, gaps, create_ms;
  for (int r = 0; r < repeats; ++r) {
    sweep_timing s = noop_sweep(**one, trials, epochs, samples);
    tuned.push_back(s.wall);
    gaps.insert(gaps.end(), s.gaps.begin(), s.gaps.end());
    by_hand.push_back(noop_by_hand(**one, trials, epochs, samples, &create_ms));
  }
  double max_gap = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());

  std::printf("\n%-62s %14s  %s\n", "what (medians)", "dtrain", "reference");
  std::printf("%-62s %14.0f  goal >= 10,000/s; Ray Tune ~1,000/s one node, ~500/s cluster\n",
              "results ingested per second, FIFO, 64 trials x 2000 epochs",
              bench::median(fifo));
  std::printf("%-62s %14.0f\n", "results ingested per second, ASHA (rf 2)", bench::median(asha));
  std::printf("%-62s %11.1f ms  goal <= 100 ms (max %.1f ms)\n",
              "slots free -> next trial's replicas ready", bench::median(gaps), max_gap);
  std::printf("%-62s %11.1f ms  (create alone, by hand)\n", "  of which trainer::create",
              bench::median(create_ms));
  double t = bench::median(tuned), h = bench::median(by_hand);
  char what[128];
  std::snprintf(what, sizeof what, "%d noop trials x %lld epochs: tuner / by hand (s)", trials,
                static_cast<long long>(epochs));
  std::printf("%-62s %6.2f / %5.2f  overhead %+.1f%% (goal <= 5%%; Ray +14%%)\n", what, t, h,
              100.0 * (t - h) / h);
  std::fflush(stdout);

  // Optuna's cost per trial, for reference, in the same run.
  std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/reference/optuna_trial_cost.py";
  bool ran = bench::for_each_output_line("/usr/bin/python3 " + script,
                                         [](const char* line) { std::printf("  optuna: %s", line); });
  if (!ran)
    std::printf("  optuna: skipped (could not run /usr/bin/python3)\n");
  std::printf("summary: %.0f results/s ingested; %.1f ms slot-to-ready; %+.1f%% sweep overhead\n",
              bench::median(fifo), bench::median(gaps), 100.0 * (t - h) / h);
  return 0;
}
