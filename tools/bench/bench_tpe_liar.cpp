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
//     Mann-Whitney test of liar < no liar over the seeds.
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

// One study, `concurrency` trials at a time: the oldest running trial ends
// first. The judged best.
double direct(const problem& p, variant v, int trials, int concurrency, uint64_t seed) {
  auto s = make(p, v, trials, seed);
  judge j;
  std::deque<std::pair<std::string, evaluation>> running;
  for (int i = 0;; ++i) {
    const std::string id = "t" + std::to_string(i);
    const tune::suggestion next = s->suggest(id);
    const bool more = next.what == tune::suggestion::kind::trial;
    if (more)
      running.emplace_back(id, evaluate(p, next.configuration, seed));
    if (more && static_cast<int>(running.size()) < concurrency)
      continue;
    if (running.empty())
      break;
    const auto [done, e] = running.front();
    running.pop_front();
    j.add(e);
    s->on_result(tune::report{done, 1, {{"validation_loss", e.observed}}});
    s->on_end(done, tune::trial_end::completed);
  }
  return j.judged;
}

std::vector<double> over_seeds(const problem& p, variant v, int trials, int concurrency,
                               int seeds) {
  std::vector<double> out;
  for (int s = 0; s < seeds; ++s)
    out.push_back(direct(p, v, trials, concurrency, static_cast<uint64_t>(s)));
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
  for (const std::string name : {"rosenbrock10", "sphere10"}) {
    uni[name] = over_seeds(named(name), {false, false}, trials, 1, seeds);
    joint[name] = over_seeds(named(name), {true, false}, trials, 1, seeds);
  }
  for (const auto& name : concurrent_functions) {
    no_liar[name] = over_seeds(named(name), {true, false}, trials, concurrency, seeds);
    liar[name] = over_seeds(named(name), {true, true}, trials, concurrency, seeds);
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
  std::printf("dtrain: %.1f s for %d studies; Optuna: %.1f s in its studies, %.1f s wall%s\n",
              dtrain_seconds, seeds * (4 + 2 * static_cast<int>(concurrent_functions.size())),
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
