// Multivariate TPE and the constant liar against Optuna 3.1, in one run
// (the checks; tools/peer/optuna_tpe.py runs Optuna beside dtrain,
// on the other core, with the same seeds):
//
//   sequential: on the 10-D Rosenbrock and Sphere, one trial at a time,
//     the median over the seeds of the best value after --trials trials
//     for dtrain's independent and multivariate TPE and Optuna's
//     multivariate (and, on Rosenbrock, independent) TPESampler, with the
//     90% bootstrap interval of each median.
//   concurrent: --concurrency trials at a time (the first C suggested
//     together, then each time the oldest running trial ends, one more),
//     Optuna through ask and tell in the same order; on Branin, Hartmann-6,
//     Rosenbrock-10 and Sphere-10, multivariate TPE without and with the
//     liar on dtrain's side, with the liar on Optuna's; a one-sided
//     Mann-Whitney test of liar < no liar over the seeds. Beside it, how
//     near each suggestion lands to the trials still running (what the
//     liar acts on) and the best value with the same searcher one trial
//     at a time (what concurrency costs).
//   tuner: Branin through dtrain's real tuner, --concurrency trials at a
//     time on as many slots, multivariate with the liar, for --tuner-seeds
//     seeds: the median best and the concurrency the sweep really had.
//
// The direct paths call the searcher in a loop with the value the
// "objective" operator reports (tpe_bench.hpp).
//
//   build/bin/dtrain-bench-tpe-liar [--seeds 100] [--trials 100]
//       [--concurrency 4] [--tuner-seeds 3] [--quick] [--no-peer]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/tune/search.hpp"
#include "dtrain/tune/tpe.hpp"
#include "tpe_bench.hpp"

using namespace dtrain;
using namespace dtrain::bench::tpe;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct variant {
  bool multivariate = false;
  bool liar = false;
};

std::unique_ptr<tune::searcher> make(const problem& p, variant v, int trials, uint64_t seed) {
  tune::tpe_options o;
  o.metric = "validation_loss";
  o.direction = tune::mode::min;
  o.num_samples = trials;
  o.multivariate = v.multivariate;
  o.constant_liar = v.liar;
  o.seed = seed;
  return tune::make_tpe(p.space, o);
}

// A suggestion's point in the unit cube (uniform dimensions only, which
// is all these problems have).
std::vector<double> unit_point(const problem& p, const tune::config& c) {
  std::vector<double> out;
  for (const auto& [name, d] : p.space.domains())
    out.push_back((std::get<double>(c.at(name)) - d.low) / (d.high - d.low));
  return out;
}

// What one study gives: the judged best, and how close its suggestions
// came to the trials still running when they were made (the region the
// liar should keep them out of).
struct study_result {
  double best = 0;
  // The median, over the model's suggestions (past the random startup)
  // made while others ran, of the distance to the nearest running trial
  // in the unit cube, over sqrt(dimensions) (0: on top of it; 1: the
  // cube's diagonal).
  double nearest_running = NAN;
};

// One study, `concurrency` trials at a time: the oldest running trial ends
// first.
study_result direct(const problem& p, variant v, int trials, int concurrency, uint64_t seed) {
  auto s = make(p, v, trials, seed);
  judge j;
  struct running_trial {
    std::string id;
    evaluation e;
    std::vector<double> at;
  };
  std::deque<running_trial> running;
  std::vector<double> nearest;
  for (int i = 0;; ++i) {
    const std::string id = "t" + std::to_string(i);
    const tune::suggestion next = s->suggest(id);
    const bool more = next.what == tune::suggestion::kind::trial;
    if (more) {
      auto at = unit_point(p, next.configuration);
      double closest = INFINITY;
      for (const auto& r : running) {
        double d2 = 0;
        for (size_t k = 0; k < at.size(); ++k)
          d2 += (at[k] - r.at[k]) * (at[k] - r.at[k]);
        closest = std::min(closest, std::sqrt(d2 / static_cast<double>(at.size())));
      }
      if (!running.empty() && i >= tune::tpe_options{}.startup_trials)
        nearest.push_back(closest);
      running.push_back({id, evaluate(p, next.configuration, seed), std::move(at)});
    }
    if (more && static_cast<int>(running.size()) < concurrency)
      continue;
    if (running.empty())
      break;
    const running_trial done = running.front();
    running.pop_front();
    j.add(done.e);
    s->on_result(tune::report{done.id, 1, {{"validation_loss", done.e.observed}}});
    s->on_end(done.id, tune::trial_end::completed);
  }
  return {j.judged, nearest.empty() ? NAN : bench::median(nearest)};
}

struct over_seeds_result {
  std::vector<double> best, nearest_running;
};

over_seeds_result over_seeds(const problem& p, variant v, int trials, int concurrency,
                             int seeds) {
  over_seeds_result out;
  for (int s = 0; s < seeds; ++s) {
    const study_result r = direct(p, v, trials, concurrency, static_cast<uint64_t>(s));
    out.best.push_back(r.best);
    out.nearest_running.push_back(r.nearest_running);
  }
  return out;
}

std::string median_text(const std::vector<double>& v) {
  return v.empty() ? "-" : format("%.4g", bench::median(v));
}

void row(const char* name, const std::vector<std::vector<double>>& columns) {
  std::printf("%-14s", name);
  for (const auto& c : columns)
    std::printf(" %24s", median_text(c).c_str());
  std::printf("\n%-14s", "  90% ci");
  for (const auto& c : columns)
    std::printf(" %24s", c.empty() ? "-" : interval_text(c, "%.4g").c_str());
  std::printf("\n");
}

// Under each dtrain column, how many seeds ended with the same best as
// the Optuna sampler of the same kind (the pair's second), when it ran.
void same_row(const std::vector<std::pair<std::vector<double>, std::vector<double>>>& pairs) {
  std::printf("%-14s", "  same seeds");
  for (const auto& [mine, theirs] : pairs)
    std::printf(" %24s", theirs.empty() ? "-" : format("%.0f", same_seeds(mine, theirs)).c_str());
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain's multivariate TPE and constant liar against Optuna 3.1"};
  int seeds = 100, trials = 100, concurrency = 4, tuner_seeds = 3;
  bool quick = false, no_peer = false;
  app.add_option("--seeds", seeds, "studies per function and searcher");
  app.add_option("--trials", trials, "trials per study");
  app.add_option("--concurrency", concurrency, "trials at a time in the concurrent part");
  app.add_option("--tuner-seeds", tuner_seeds, "Branin studies through the real tuner");
  app.add_flag("--quick", quick, "5 seeds, 30 trials, 1 through the tuner");
  app.add_flag("--no-peer", no_peer, "skip Optuna");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    seeds = std::min(seeds, 5);
    trials = std::min(trials, 30);
    tuner_seeds = std::min(tuner_seeds, 1);
  }
  const std::string common =
      "--seeds " + std::to_string(seeds) + " --trials " + std::to_string(trials);
  const std::vector<std::string> concurrent_functions = {"branin", "hartmann6", "rosenbrock10",
                                                         "sphere10"};

  // Optuna on the other core while dtrain runs here.
  peer_results sequential_peer, concurrent_peer;
  std::string skipped = no_peer ? "--no-peer" : "";
  double peer_wall = 0;
  std::thread peer([&] {
    if (no_peer)
      return;
    auto start = clock_type::now();
    std::string why = run_peer(common + " --functions rosenbrock10,sphere10 --samplers mvtpe",
                               sequential_peer);
    if (why.empty())
      why = run_peer(common + " --functions rosenbrock10 --samplers tpe", sequential_peer);
    if (why.empty())
      why = run_peer(common + " --functions branin,hartmann6,rosenbrock10,sphere10 --samplers "
                              "mvtpe_liar --concurrency " + std::to_string(concurrency),
                     concurrent_peer);
    skipped = why;
    peer_wall = seconds_since(start);
  });

  auto start = clock_type::now();
  std::map<std::string, std::vector<double>> uni, joint, no_liar, liar;
  std::map<std::string, std::vector<double>> no_liar_nearest, liar_nearest;
  for (const std::string name : {"rosenbrock10", "sphere10"})
    uni[name] = over_seeds(named(name), {false, false}, trials, 1, seeds).best;
  for (const auto& name : concurrent_functions) {
    // Sequential multivariate on every function: what running trials
    // concurrently costs, the loss the liar is there to win back.
    joint[name] = over_seeds(named(name), {true, false}, trials, 1, seeds).best;
    auto plain = over_seeds(named(name), {true, false}, trials, concurrency, seeds);
    auto lied = over_seeds(named(name), {true, true}, trials, concurrency, seeds);
    no_liar[name] = plain.best;
    no_liar_nearest[name] = plain.nearest_running;
    liar[name] = lied.best;
    liar_nearest[name] = lied.nearest_running;
  }
  const double dtrain_seconds = seconds_since(start);
  peer.join();

  std::printf("Sequential: median over %d seeds of the best value after %d trials (smaller is "
              "better)\n",
              seeds, trials);
  std::printf("%-14s %24s %24s %24s %24s\n", "function", "dtrain independent",
              "dtrain multivariate", "Optuna multivariate", "Optuna independent");
  bool goal = skipped.empty();
  std::string summary;
  for (const std::string name : {"rosenbrock10", "sphere10"}) {
    const auto& peer_joint = sequential_peer.of(name, "mvtpe");
    row(name.c_str(), {uni[name], joint[name], peer_joint, sequential_peer.of(name, "tpe")});
    same_row({{uni[name], sequential_peer.of(name, "tpe")}, {joint[name], peer_joint}});
    const bool met = bench::median(joint[name]) <= bench::median(peer_joint) ||
                     inside(bench::median(joint[name]), median_interval(peer_joint));
    goal = goal && met;
    summary += name + " multivariate " + median_text(joint[name]) + " vs Optuna's " +
               median_text(peer_joint) + (met ? " (inside or better)" : " (NOT inside)") + "; ";
  }
  const double ratio =
      bench::median(uni["rosenbrock10"]) / bench::median(joint["rosenbrock10"]);
  const auto& optuna_uni = sequential_peer.of("rosenbrock10", "tpe");
  const auto& optuna_joint = sequential_peer.of("rosenbrock10", "mvtpe");
  std::printf("rosenbrock10 independent / multivariate: dtrain %.2fx, Optuna %sx\n", ratio,
              optuna_uni.empty() || optuna_joint.empty()
                  ? "-"
                  : format("%.2f", bench::median(optuna_uni) / bench::median(optuna_joint)).c_str());

  std::printf("\nConcurrent, %d at a time: median over %d seeds of the best after %d trials; "
              "p: one-sided Mann-Whitney, liar < no liar\n",
              concurrency, seeds, trials);
  std::printf("%-14s %24s %24s %24s %10s\n", "function", "dtrain mv, no liar", "dtrain mv, liar",
              "Optuna mv, liar", "p");
  int liar_wins = 0;
  for (const auto& name : concurrent_functions) {
    const auto& peer_liar = concurrent_peer.of(name, "mvtpe_liar");
    row(name.c_str(), {no_liar[name], liar[name], peer_liar});
    same_row({{}, {liar[name], peer_liar}});
    const double p = mann_whitney_less(liar[name], no_liar[name]);
    std::printf("%-14s %24s %24s %24s %10.4f\n", "", "", "", "", p);
    liar_wins += p < 0.05;
    const bool met = bench::median(liar[name]) <= bench::median(peer_liar) ||
                     inside(bench::median(liar[name]), median_interval(peer_liar));
    goal = goal && met;
    summary += name + " liar " + median_text(liar[name]) + " vs Optuna's " +
               median_text(peer_liar) + (met ? " (inside or better)" : " (NOT inside)") +
               (p < 0.05 ? ", beats no liar" : ", does not beat no liar") + "; ";
  }

  std::printf("\nWhere the concurrent suggestions land, and what concurrency costs: median "
              "over %d seeds\n",
              seeds);
  std::printf("%-14s %14s %14s %10s %14s %14s %14s\n", "function", "near, no liar",
              "near, liar", "p", "sequential",
              (std::to_string(concurrency) + ", no liar").c_str(),
              (std::to_string(concurrency) + ", liar").c_str());
  for (const auto& name : concurrent_functions) {
    const double p = mann_whitney_less(no_liar_nearest[name], liar_nearest[name]);
    std::printf("%-14s %14.4f %14.4f %10.2g %14.4g %14.4g %14.4g\n", name.c_str(),
                bench::median(no_liar_nearest[name]), bench::median(liar_nearest[name]), p,
                bench::median(joint[name]), bench::median(no_liar[name]),
                bench::median(liar[name]));
  }
  std::printf("(near: per study, the median over the model's suggestions made while others "
              "ran of the distance to the nearest running trial, in the unit cube over "
              "sqrt(dimensions); p: one-sided Mann-Whitney, liar farther than no liar; the "
              "last three: the best value one at a time and %d at a time)\n",
              concurrency);
  std::printf("dtrain: %.1f s for %d studies; Optuna: %.1f s in its studies, %.1f s wall%s\n",
              dtrain_seconds, seeds * (2 + 3 * static_cast<int>(concurrent_functions.size())),
              sequential_peer.study_seconds + concurrent_peer.study_seconds, peer_wall,
              skipped.empty() ? "" : (", skipped: " + skipped).c_str());

  if (tuner_seeds > 0) {
    actors::cluster::options o;
    o.local_slots = concurrency;
    auto c = actors::cluster::connect(o);
    if (!c) {
      std::fprintf(stderr, "error: %s\n", c.error().to_string().c_str());
      return 1;
    }
    std::vector<double> bests;
    int most = 0;
    auto tuner_start = clock_type::now();
    for (int s = 0; s < tuner_seeds; ++s) {
      actors::tune_config tc;
      tc.experiment = "bench-tpe-liar";
      tc.tpe_multivariate = true;
      tc.tpe_constant_liar = true;
      tc.num_samples = trials;
      tc.max_concurrent_trials = concurrency;
      auto [best, at_once] = through_tuner(**c, named("branin"), tc, static_cast<uint64_t>(s));
      bests.push_back(best);
      most = std::max(most, at_once);
    }
    std::printf("\nbranin through the tuner (multivariate, liar, %d slots): median best %s over "
                "%d seed(s) of %d trials, %.1f s; up to %d trials ran at once\n",
                concurrency, median_text(bests).c_str(), tuner_seeds, trials,
                seconds_since(tuner_start), most);
  }
  std::printf("summary: %sliar beats no liar on %d of %zu functions (goal: 3); goal %s\n",
              summary.c_str(), liar_wins, concurrent_functions.size(),
              goal && liar_wins >= 3 ? "met" : "NOT met");
  return 0;
}
