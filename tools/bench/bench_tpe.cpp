// The TPE searcher against Optuna 3.1's TPESampler (the check):
// on Branin (x1 in [-5, 10], x2 in [0, 15]), Hartmann-6 ([0, 1]^6) and a
// noisy Branin (noise sd 1.0 on the observed value), the median over the
// seeds of the best value after 50 trials, for dtrain TPE, dtrain random
// search, Optuna TPE and Optuna random search, the peer
// (tools/peer/optuna_tpe.py, Debian's python3-optuna) run in the same
// invocation with the same seeds.
//
// Two paths on the dtrain side, named in the table:
//   direct: the searcher is called in a loop with the value of the very
//     function the "objective" operator reports (train::objective_value
//     on the trial's hyperparameters and trainer seed, rounded to a float
//     as the trainer's loss is), trials one at a time as Optuna's loop runs
//     them. This is the full grid.
//   tuner: dtrain's tuner on an embedded cluster, each trial a real
//     trainer group of the objective operator (one replica, one epoch),
//     one trial at a time; Branin with TPE for --tuner-seeds seeds. The
//     table says whether each seed's best equals the direct path's.
//
// The noisy Branin is judged by the noiseless value of the trial with the
// best observed (noisy) value, on both sides: what a user picking the
// best-looking trial gets.
//
//   build/bin/dtrain-bench-tpe [--seeds 20] [--trials 50] [--tuner-seeds 20] [--quick]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "tpe_bench.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/train/objective.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/tpe.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

using bench::tpe::evaluate;
using bench::tpe::evaluation;
using bench::tpe::format;
using bench::tpe::judge;
using bench::tpe::median_interval;
using bench::tpe::problem;
using bench::tpe::template_config;
using bench::tpe::trainer_seed;

std::vector<problem> problems(const std::string& names) {
  std::vector<problem> out;
  size_t from = 0;
  while (from <= names.size()) {
    const size_t comma = std::min(names.find(',', from), names.size());
    out.push_back(bench::tpe::named(names.substr(from, comma - from)));
    from = comma + 1;
  }
  return out;
}

std::unique_ptr<tune::searcher> make(const std::string& which, const problem& p, int trials,
                                     uint64_t seed) {
  if (which == "random")
    return tune::make_variant_searcher(p.space, trials, seed);
  tune::tpe_options o;
  o.metric = "validation_loss";
  o.direction = tune::mode::min;
  o.num_samples = trials;
  o.seed = seed;
  return tune::make_tpe(p.space, o);
}

// The direct path: one study of `trials` trials, one at a time.
double direct(const std::string& which, const problem& p, int trials, uint64_t seed) {
  auto s = make(which, p, trials, seed);
  judge j;
  for (int i = 0;; ++i) {
    const std::string id = "t" + std::to_string(i);
    tune::suggestion next = s->suggest(id);
    if (next.what != tune::suggestion::kind::trial)
      break;
    const evaluation e = evaluate(p, next.configuration, seed);
    j.add(e);
    s->on_result(tune::report{id, 1, {{"validation_loss", e.observed}}});
    s->on_end(id, tune::trial_end::completed);
  }
  return j.judged;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain TPE against Optuna 3.1's TPESampler"};
  int seeds = 20, trials = 50, tuner_seeds = 20;
  bool quick = false, no_peer = false, per_seed = false;
  std::string functions = "branin,hartmann6,noisy_branin";
  app.add_option("--seeds", seeds, "studies per function and searcher");
  app.add_option("--trials", trials, "trials per study");
  app.add_option("--tuner-seeds", tuner_seeds, "Branin TPE studies through the real tuner");
  app.add_flag("--quick", quick, "5 seeds, 1 through the tuner");
  app.add_flag("--no-peer", no_peer, "skip Optuna");
  app.add_flag("--per-seed", per_seed, "print dtrain's best of every study");
  app.add_option("--functions", functions,
                 "comma-separated: branin, hartmann6, noisy_branin, rosenbrock10, sphere10");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    seeds = std::min(seeds, 5);
    tuner_seeds = std::min(tuner_seeds, 1);
  }

  bench::tpe::peer_results optuna;
  auto peer_start = clock_type::now();
  const std::string skipped =
      no_peer ? "--no-peer"
              : bench::tpe::run_peer("--seeds " + std::to_string(seeds) + " --trials " +
                                         std::to_string(trials) + " --functions " + functions,
                                     optuna);
  const double peer_wall = seconds_since(peer_start);
  const double peer_seconds = optuna.study_seconds;

  std::printf("TPE against Optuna 3.1: median over %d seeds of the best value after %d trials "
              "(smaller is better)\n",
              seeds, trials);
  std::printf("%-14s %-7s %18s %18s %18s %18s\n", "function", "path", "dtrain TPE",
              "dtrain random", "Optuna TPE", "Optuna random");
  std::map<std::string, std::map<std::string, double>> medians;
  double direct_seconds = 0;
  std::string summary;
  bool goal = skipped.empty();
  for (const problem& p : problems(functions)) {
    std::vector<double> tpe, random;
    auto start = clock_type::now();
    for (int s = 0; s < seeds; ++s) {
      tpe.push_back(direct("tpe", p, trials, static_cast<uint64_t>(s)));
      random.push_back(direct("random", p, trials, static_cast<uint64_t>(s)));
    }
    direct_seconds += seconds_since(start);
    auto& m = medians[p.name];
    m["tpe"] = bench::median(tpe);
    m["random"] = bench::median(random);
    const auto& peer_tpe = optuna.of(p.name, "tpe");
    const auto& peer_random = optuna.of(p.name, "random");
    m["optuna tpe"] = peer_tpe.empty() ? NAN : bench::median(peer_tpe);
    m["optuna random"] = peer_random.empty() ? NAN : bench::median(peer_random);
    std::printf("%-14s %-7s %18s %18s %18s %18s\n", p.name.c_str(), "direct",
                format("%.4f", m["tpe"]).c_str(), format("%.4f", m["random"]).c_str(),
                format("%.4f", m["optuna tpe"]).c_str(),
                format("%.4f", m["optuna random"]).c_str());
    using bench::tpe::interval_text;
    std::printf("%-14s %-7s %18s %18s %18s %18s\n", "", "90% ci", interval_text(tpe).c_str(),
                interval_text(random).c_str(), interval_text(peer_tpe).c_str(),
                interval_text(peer_random).c_str());
    if (!peer_tpe.empty())
      std::printf("%-14s %-7s %18s   seeds whose best equals Optuna TPE's\n", "", "same",
                  format("%.0f", bench::tpe::same_seeds(tpe, peer_tpe)).c_str());
    if (per_seed)
      for (int s = 0; s < seeds; ++s)
        std::printf("seed %s %d: dtrain tpe %.6f random %.6f\n", p.name.c_str(), s,
                    tpe[static_cast<size_t>(s)], random[static_cast<size_t>(s)]);
    // The goal: dtrain's median no worse than Optuna's or inside the 90%
    // interval of Optuna's median, and better than random search.
    const bool met = (m["tpe"] <= m["optuna tpe"] ||
                      bench::tpe::inside(m["tpe"], median_interval(peer_tpe))) &&
                     m["tpe"] < m["random"];
    goal = goal && met;
    summary += (summary.empty() ? "" : "; ") + p.name + " " + format("%.4f", m["tpe"]) + " vs " +
               format("%.4f", m["optuna tpe"]) + (met ? " (met)" : " (NOT met)");
  }
  std::printf("(90%% ci: a bootstrap interval of the median over the seeds; "
              "noisy_branin: noise sd 1.0 on the observed value; judged by the noiseless value "
              "of the trial with the best observed value, on both sides)\n");
  std::printf("direct path: %.2f s for %d studies; Optuna: %.2f s in its studies (%.1f s with "
              "Python's start)%s\n",
              direct_seconds, 2 * seeds * static_cast<int>(problems(functions).size()), peer_seconds, peer_wall,
              skipped.empty() ? "" : (", skipped: " + skipped).c_str());

  if (tuner_seeds > 0) {
    actors::cluster::options o;
    o.local_slots = 1;
    auto c = actors::cluster::connect(o);
    if (!c) {
      std::fprintf(stderr, "error: %s\n", c.error().to_string().c_str());
      return 1;
    }
    const problem branin = bench::tpe::named("branin");
    std::vector<double> bests;
    int same = 0;
    auto start = clock_type::now();
    for (int s = 0; s < tuner_seeds; ++s) {
      actors::tune_config tc;
      tc.experiment = "bench-tpe";
      tc.num_samples = trials;
      tc.max_concurrent_trials = 1;
      bests.push_back(bench::tpe::through_tuner(**c, branin, tc, static_cast<uint64_t>(s)).first);
      same += bests.back() == direct("tpe", branin, trials, static_cast<uint64_t>(s));
    }
    const double took = seconds_since(start);
    std::printf("%-14s %-7s %12s   median of %d seed(s) through the tuner, %d trials of the "
                "objective operator each (1 replica, 1 epoch): %.1f s, %.0f ms/trial; %d of %d "
                "equal to the direct path's\n",
                "branin", "tuner", format("%.4f", bench::median(bests)).c_str(), tuner_seeds,
                trials, took, 1000 * took / (tuner_seeds * trials), same, tuner_seeds);
  }
  std::printf("summary: dtrain TPE vs Optuna TPE median best: %s; goal (no worse than Optuna's "
              "TPE or inside its median's 90%% interval, better than random) %s\n",
              summary.c_str(), goal ? "met" : "NOT met");
  return 0;
}
