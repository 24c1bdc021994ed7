#pragma once

// What the TPE benchmarks (bench_tpe.cpp, bench_tpe_liar.cpp) share: the
// test problems as the objective operator computes them, the judged best
// of a study, Optuna's side (tools/peer/optuna_tpe.py) and the statistics.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/driver/tuner/tuner.hpp"
#include "dtrain/train/objective.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::bench::tpe {

struct problem {
  std::string name;      // as the peer prints it
  std::string function;  // the operator's
  double noise = 0;
  tune::space space;
};

/// branin, hartmann6, noisy_branin (noise sd 1), rosenbrock10 and sphere10
/// (on De Jong's domains, [-2.048, 2.048]^10 and [-5.12, 5.12]^10).
inline problem named(const std::string& name) {
  problem p{name, name, 0, {}};
  if (name == "branin" || name == "noisy_branin") {
    p.function = "branin";
    p.noise = name == "noisy_branin" ? 1.0 : 0.0;
    p.space.add("x1", tune::uniform(-5, 10)).add("x2", tune::uniform(0, 15));
  } else if (name == "hartmann6") {
    for (int i = 1; i <= 6; ++i)
      p.space.add("x" + std::to_string(i), tune::uniform(0, 1));
  } else {
    const double bound = name == "rosenbrock10" ? 2.048 : 5.12;
    p.function = name == "rosenbrock10" ? "rosenbrock" : "sphere";
    for (int i = 1; i <= 10; ++i)
      p.space.add("x" + std::to_string(i), tune::uniform(-bound, bound));
  }
  return p;
}

/// The trial template's hyperparameters (those the tuner adds to each
/// trial's configuration).
inline std::map<std::string, std::string> template_config(const problem& p) {
  return {{"function", p.function}, {"noise", tune::to_string(tune::value{p.noise})}};
}

inline uint64_t trainer_seed(uint64_t seed) { return 1000 + seed; }

/// What the operator reports for a configuration (observed) and the
/// function without noise (judged).
struct evaluation {
  double observed = 0;
  double noiseless = 0;
};

inline evaluation evaluate(const problem& p, const tune::config& c, uint64_t seed) {
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

/// The noiseless value of the trial with the best observed value (the
/// first such trial on ties, as Optuna's best_trial).
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

/// Optuna's per-seed bests: results[function][sampler] = values by seed.
struct peer_results {
  std::map<std::string, std::map<std::string, std::vector<double>>> best;
  double study_seconds = 0;  // summed over its studies
  std::string version;
  const std::vector<double>& of(const std::string& function, const std::string& sampler) const {
    static const std::vector<double> none;
    auto f = best.find(function);
    if (f == best.end() || f->second.count(sampler) == 0)
      return none;
    return f->second.at(sampler);
  }
};

/// Runs tools/peer/optuna_tpe.py with `arguments`; "" or why it gave
/// nothing.
inline std::string run_peer(const std::string& arguments, peer_results& out) {
  const std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/peer/optuna_tpe.py";
  const bool started =
      for_each_output_line("/usr/bin/python3 " + script + " " + arguments, [&](const char* line) {
        char function[64], sampler[64], v[64];
        int seed = 0;
        double best = 0, seconds = 0;
        if (std::sscanf(line, "result %63s %63s %d %lf %lf", function, sampler, &seed, &best,
                        &seconds) == 5) {
          out.best[function][sampler].push_back(best);
          out.study_seconds += seconds;
        } else if (std::sscanf(line, "peer optuna %63s", v) == 1) {
          out.version = v;
        } else {
          std::fprintf(stderr, "peer: %s", line);
        }
      });
  if (!started)
    return "could not start /usr/bin/python3";
  if (out.version.empty())
    return "no figures from " + script + " (is Debian's python3-optuna installed?)";
  return "";
}

using bench::median_interval;

/// How many seeds end with the same best value on both sides (to 1e-6
/// relative: dtrain's direct path reports the objective rounded to a
/// float, as a trainer's loss is). dtrain's TPE draws Optuna's random
/// stream, so equal values mean the same trials were chosen.
inline int same_seeds(const std::vector<double>& dtrain, const std::vector<double>& optuna) {
  int same = 0;
  for (size_t i = 0; i < std::min(dtrain.size(), optuna.size()); ++i)
    same += std::fabs(dtrain[i] - optuna[i]) <= 1e-6 * std::max(1.0, std::fabs(optuna[i]));
  return same;
}

inline bool inside(double x, const std::pair<double, double>& interval) {
  return x >= interval.first && x <= interval.second;
}

/// One-sided Mann-Whitney U test that `a` tends to be smaller than `b`:
/// the p-value by the normal approximation with the tie correction and a
/// continuity correction (scipy.stats.mannwhitneyu(a, b, alternative=
/// "less", method="asymptotic")).
inline double mann_whitney_less(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, int>> all;
  for (double x : a)
    all.push_back({x, 0});
  for (double x : b)
    all.push_back({x, 1});
  std::sort(all.begin(), all.end());
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  const double n = n1 + n2;
  double rank_sum_a = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first)
      ++j;
    const double midrank = 0.5 * static_cast<double>(i + 1 + j);
    const double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0)
        rank_sum_a += midrank;
    i = j;
  }
  const double u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double mean = n1 * n2 / 2;
  const double sd = std::sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))));
  const double z = (u - mean + 0.5) / sd;
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

/// A study through dtrain's real tuner: trials of the objective operator
/// (one replica, one epoch) with the TPE settings `tc` holds (experiment,
/// concurrency, multivariate, liar); the judged best (NaN when the sweep
/// failed) and the most trials that ran at once.
inline std::pair<double, int> through_tuner(actors::cluster& c, const problem& p,
                                            actors::tune_config tc, uint64_t seed) {
  actors::trainer_config t;
  t.operator_name = "objective";
  t.config = template_config(p);
  t.num_replicas = 1;
  t.global_batch_size = 1;
  t.seed = trainer_seed(seed);
  tc.metric = "validation_loss";
  tc.direction = tune::mode::min;
  tc.searcher = "tpe";
  tc.max_epochs = 1;
  tc.seed = seed;
  tc.verbosity = 0;
  actors::tuner sweep(c, t, p.space, tc);
  auto grid = sweep.fit();
  if (!grid) {
    std::fprintf(stderr, "error: %s\n", grid.error().to_string().c_str());
    return {NAN, 0};
  }
  judge j;
  std::vector<std::pair<double, int>> edges;  // +1 at a start, -1 at an end
  for (const auto& trial : grid->trials) {
    evaluation e = evaluate(p, trial.configuration, seed);
    e.observed = trial.last("validation_loss");  // as reported, not recomputed
    j.add(e);
    edges.push_back({trial.started_at, 1});
    edges.push_back({trial.ended_at, -1});
  }
  std::sort(edges.begin(), edges.end());
  int now = 0, most = 0;
  for (const auto& [at, step] : edges)
    most = std::max(most, now += step);
  return {j.judged, most};
}

inline std::string format(const char* f, double x) {
  if (std::isnan(x))
    return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

inline std::string interval_text(const std::vector<double>& v, const char* f = "%.3f") {
  const auto [lo, hi] = median_interval(v);
  return "[" + format(f, lo) + ", " + format(f, hi) + "]";
}

} // namespace dtrain::bench::tpe
