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

struct problem {
  std::string name;      // as the peer prints it
  std::string function;  // the operator's
  double noise = 0;
  tune::space space;
};

std::vector<problem> problems() {
  tune::space branin;
  branin.add("x1", tune::uniform(-5, 10)).add("x2", tune::uniform(0, 15));
  tune::space hartmann;
  for (int i = 1; i <= 6; ++i)
    hartmann.add("x" + std::to_string(i), tune::uniform(0, 1));
  return {{"branin", "branin", 0, branin},
          {"hartmann6", "hartmann6", 0, hartmann},
          {"noisy_branin", "branin", 1.0, branin}};
}

// The trial template's hyperparameters (those the tuner adds to each
// trial's configuration).
std::map<std::string, std::string> template_config(const problem& p) {
  return {{"function", p.function}, {"noise", tune::to_string(tune::value{p.noise})}};
}

uint64_t trainer_seed(uint64_t seed) { return 1000 + seed; }

// What the operator reports for `c` (observed) and the function without
// noise (judged).
struct evaluation {
  double observed = 0;
  double noiseless = 0;
};

evaluation evaluate(const problem& p, const tune::config& c, uint64_t seed) {
  auto hp = template_config(p);
  for (auto& [key, text] : tune::to_strings(c))
    hp[key] = text;
  auto spec = train::read_objective(train::hyperparameters(hp), trainer_seed(seed));
  if (!spec) {
    std::fprintf(stderr, "error: %s\n", spec.error().to_string().c_str());
    std::exit(1);
  }
  evaluation out;
  out.observed = static_cast<float>(train::objective_value(*spec, 1));  // the trainer's float
  spec->noise = 0;
  out.noiseless = train::objective_value(*spec, 1);
  return out;
}

// The noiseless value of the trial with the best observed value (the
// first such trial on ties, as Optuna's best_trial).
struct judge {
  double best_observed = INFINITY;
  double judged = NAN;
  void add(const evaluation& e) {
    if (e.observed < best_observed) {
      best_observed = e.observed;
      judged = e.noiseless;
    }
  }
};

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

// The tuner path: the same study through dtrain's tuner and trainer groups
// of the objective operator; NaN when the sweep failed.
double through_tuner(actors::cluster& c, const problem& p, int trials, uint64_t seed) {
  actors::trainer_config t;
  t.operator_name = "objective";
  t.config = template_config(p);
  t.num_replicas = 1;
  t.global_batch_size = 1;
  t.seed = trainer_seed(seed);
  actors::tune_config tc;
  tc.experiment = "bench-tpe";
  tc.metric = "validation_loss";
  tc.direction = tune::mode::min;
  tc.searcher = "tpe";
  tc.num_samples = trials;
  tc.max_epochs = 1;
  tc.max_concurrent_trials = 1;
  tc.seed = seed;
  tc.verbosity = 0;
  actors::tuner sweep(c, t, p.space, tc);
  auto grid = sweep.fit();
  if (!grid) {
    std::fprintf(stderr, "error: %s\n", grid.error().to_string().c_str());
    return NAN;
  }
  judge j;
  for (const auto& trial : grid->trials) {
    evaluation e = evaluate(p, trial.configuration, seed);
    e.observed = trial.last("validation_loss");  // as reported, not recomputed
    j.add(e);
  }
  return j.judged;
}

// Optuna's per-seed bests: peer[function][sampler] = values; the peer's
// seconds per study summed into peer_seconds.
using peer_results = std::map<std::string, std::map<std::string, std::vector<double>>>;

std::string run_peer(int seeds, int trials, peer_results& out, double& peer_seconds) {
  const std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/peer/optuna_tpe.py";
  std::string version;
  const bool started = bench::for_each_output_line(
      "/usr/bin/python3 " + script + " --seeds " + std::to_string(seeds) + " --trials " +
          std::to_string(trials),
      [&](const char* line) {
        char function[64], sampler[64], v[64];
        int seed = 0;
        double best = 0, seconds = 0;
        if (std::sscanf(line, "result %63s %63s %d %lf %lf", function, sampler, &seed, &best,
                        &seconds) == 5) {
          out[function][sampler].push_back(best);
          peer_seconds += seconds;
        } else if (std::sscanf(line, "peer optuna %63s", v) == 1) {
          version = v;
        } else {
          std::fprintf(stderr, "peer: %s", line);
        }
      });
  if (!started)
    return "could not start /usr/bin/python3";
  if (version.empty())
    return "no figures from " + script + " (is Debian's python3-optuna installed?)";
  return "";
}

// A 90% bootstrap interval of the median over the seeds (2,000
// resamples, a fixed generator): how much of a gap between two medians the
// choice of seeds alone explains.
std::pair<double, double> median_interval(const std::vector<double>& v) {
  if (v.empty())
    return {NAN, NAN};
  rng r(12345);
  std::vector<double> medians;
  std::vector<double> resample(v.size());
  for (int b = 0; b < 2000; ++b) {
    for (double& x : resample)
      x = v[r.below(v.size())];
    medians.push_back(bench::median(resample));
  }
  std::sort(medians.begin(), medians.end());
  return {medians[100], medians[1899]};
}

std::string format(const char* f, double x) {
  if (std::isnan(x))
    return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain TPE against Optuna 3.1's TPESampler"};
  int seeds = 20, trials = 50, tuner_seeds = 20;
  bool quick = false, no_peer = false, per_seed = false;
  app.add_option("--seeds", seeds, "studies per function and searcher");
  app.add_option("--trials", trials, "trials per study");
  app.add_option("--tuner-seeds", tuner_seeds, "Branin TPE studies through the real tuner");
  app.add_flag("--quick", quick, "5 seeds, 1 through the tuner");
  app.add_flag("--no-peer", no_peer, "skip Optuna");
  app.add_flag("--per-seed", per_seed, "print dtrain's best of every study");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    seeds = std::min(seeds, 5);
    tuner_seeds = std::min(tuner_seeds, 1);
  }

  peer_results optuna;
  double peer_seconds = 0;
  auto peer_start = clock_type::now();
  const std::string skipped = no_peer ? "--no-peer" : run_peer(seeds, trials, optuna, peer_seconds);
  const double peer_wall = seconds_since(peer_start);

  std::printf("TPE against Optuna 3.1: median over %d seeds of the best value after %d trials "
              "(smaller is better)\n",
              seeds, trials);
  std::printf("%-14s %-7s %18s %18s %18s %18s\n", "function", "path", "dtrain TPE",
              "dtrain random", "Optuna TPE", "Optuna random");
  std::map<std::string, std::map<std::string, double>> medians;
  double direct_seconds = 0;
  std::string summary;
  bool goal = skipped.empty();
  for (const problem& p : problems()) {
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
    const auto& peer = optuna[p.name];
    m["optuna tpe"] = peer.count("tpe") && !peer.at("tpe").empty() ? bench::median(peer.at("tpe"))
                                                                   : NAN;
    m["optuna random"] = peer.count("random") && !peer.at("random").empty()
                             ? bench::median(peer.at("random"))
                             : NAN;
    std::printf("%-14s %-7s %18s %18s %18s %18s\n", p.name.c_str(), "direct",
                format("%.4f", m["tpe"]).c_str(), format("%.4f", m["random"]).c_str(),
                format("%.4f", m["optuna tpe"]).c_str(),
                format("%.4f", m["optuna random"]).c_str());
    auto interval = [](const std::vector<double>& v) {
      auto [lo, hi] = median_interval(v);
      return "[" + format("%.3f", lo) + ", " + format("%.3f", hi) + "]";
    };
    std::printf("%-14s %-7s %18s %18s %18s %18s\n", "", "90% ci", interval(tpe).c_str(),
                interval(random).c_str(),
                interval(peer.count("tpe") ? peer.at("tpe") : std::vector<double>{}).c_str(),
                interval(peer.count("random") ? peer.at("random") : std::vector<double>{}).c_str());
    if (per_seed)
      for (int s = 0; s < seeds; ++s)
        std::printf("seed %s %d: dtrain tpe %.6f random %.6f\n", p.name.c_str(), s,
                    tpe[static_cast<size_t>(s)], random[static_cast<size_t>(s)]);
    const bool met = m["tpe"] <= m["optuna tpe"] && m["tpe"] < m["random"];
    goal = goal && met;
    // Not met but Optuna's median inside dtrain's interval: the seeds alone
    // can explain the gap.
    const auto [lo, hi] = median_interval(tpe);
    const bool noise = !met && m["optuna tpe"] >= lo && m["optuna tpe"] <= hi;
    summary += (summary.empty() ? "" : "; ") + p.name + " " + format("%.4f", m["tpe"]) + " vs " +
               format("%.4f", m["optuna tpe"]) +
               (met ? " (met)" : noise ? " (NOT met, within seed noise)" : " (NOT met)");
  }
  std::printf("(90%% ci: a bootstrap interval of the median over the seeds; "
              "noisy_branin: noise sd 1.0 on the observed value; judged by the noiseless value "
              "of the trial with the best observed value, on both sides)\n");
  std::printf("direct path: %.2f s for %d studies; Optuna: %.2f s in its studies (%.1f s with "
              "Python's start)%s\n",
              direct_seconds, 2 * seeds * 3, peer_seconds, peer_wall,
              skipped.empty() ? "" : (", skipped: " + skipped).c_str());

  if (tuner_seeds > 0) {
    actors::cluster::options o;
    o.local_slots = 1;
    auto c = actors::cluster::connect(o);
    if (!c) {
      std::fprintf(stderr, "error: %s\n", c.error().to_string().c_str());
      return 1;
    }
    const problem branin = problems().front();
    std::vector<double> bests;
    int same = 0;
    auto start = clock_type::now();
    for (int s = 0; s < tuner_seeds; ++s) {
      bests.push_back(through_tuner(**c, branin, trials, static_cast<uint64_t>(s)));
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
              "TPE, better than random) %s\n",
              summary.c_str(), goal ? "met" : "NOT met");
  return 0;
}
