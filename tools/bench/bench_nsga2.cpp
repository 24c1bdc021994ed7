// The NSGA-II searcher against Optuna 3.1's NSGAIISampler (the issue's
// check): on ZDT1 (2 objectives, 30 variables), DTLZ2 (3 objectives, 12
// variables) and C2-DTLZ2 (DTLZ2 with Jain and Deb's constraint, r = 0.4),
// 200 trials x 50 seeds, trials one at a time, both with Optuna's
// defaults (population 50, uniform crossover 0.9 / swap 0.5, mutation
// 1/n). The peer (tools/peer/optuna_nsga2.py, Debian's python3-optuna)
// runs in the same invocation and prints its trials' values; the
// hypervolumes of both sides are computed here by dtrain's pareto.hpp.
//
// Hypervolume of all the study's (feasible) trials, objectives minimized,
// points beyond the reference left out. Reference points: ZDT1 (1.1, 11)
// (every ZDT1 value lies inside: f1 <= 1, f2 <= g <= 10); DTLZ2 and
// C2-DTLZ2 (3.5, 3.5, 3.5) (f_i <= 1 + g <= 3.5). Medians over the seeds,
// with a 90% bootstrap interval of Optuna's median. C2-DTLZ2: also the
// median fraction of feasible trials.
//
// With --searcher tpe, the same for multi-objective TPE against Optuna
// 3.1's TPESampler on several objectives (its defaults, constraints_func
// for C2-DTLZ2).
//
//   build/bin/dtrain-bench-nsga2 [--seeds 50] [--trials 200] [--searcher nsga2|tpe]
//       [--problems zdt1,dtlz2,c2dtlz2] [--no-peer] [--peer-jobs 1]
//
// --peer-jobs N splits Optuna's seeds over N processes (seed % N), for
// the studies that take Optuna minutes each (multi-objective TPE on
// DTLZ2: about 240 s); the figures do not depend on it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/tune/nsga2.hpp"
#include "dtrain/tune/pareto.hpp"
#include "dtrain/tune/tpe.hpp"

using namespace dtrain;
using clock_type = std::chrono::steady_clock;

namespace {

struct problem {
  std::string name;  // as the peer prints it
  int variables = 0;
  int objectives = 0;
  bool constrained = false;
  tune::point reference;
};

std::vector<problem> all_problems() {
  return {{"zdt1", 30, 2, false, {1.1, 11}},
          {"dtlz2", 12, 3, false, {3.5, 3.5, 3.5}},
          {"c2dtlz2", 12, 3, true, {3.5, 3.5, 3.5}}};
}

// The problems named in the comma-separated `names`, in their order.
std::vector<problem> problems(const std::string& names) {
  std::vector<problem> out;
  std::istringstream in(names);
  std::string name;
  while (std::getline(in, name, ','))
    for (const auto& p : all_problems())
      if (p.name == name)
        out.push_back(p);
  return out;
}

std::vector<double> zdt1(const std::vector<double>& x) {
  double g = 0;
  for (size_t i = 1; i < x.size(); ++i)
    g += x[i];
  g = 1 + 9 * g / static_cast<double>(x.size() - 1);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}

std::vector<double> dtlz2(const std::vector<double>& x, size_t m = 3) {
  const double half_pi = std::acos(0.0);
  double g = 0;
  for (size_t i = m - 1; i < x.size(); ++i)
    g += (x[i] - 0.5) * (x[i] - 0.5);
  std::vector<double> f;
  for (size_t i = 0; i < m; ++i) {
    double v = 1 + g;
    for (size_t j = 0; j + 1 + i < m; ++j)
      v *= std::cos(x[j] * half_pi);
    if (i > 0)
      v *= std::sin(x[m - 1 - i] * half_pi);
    f.push_back(v);
  }
  return f;
}

// C2-DTLZ2's constraint (Jain and Deb 2014): feasible (<= 0) inside a
// sphere of radius r around a point of the front or around its centre.
double c2_violation(const std::vector<double>& f, double r = 0.4) {
  const double m = static_cast<double>(f.size());
  double corner = INFINITY, centre = -r * r;
  for (size_t i = 0; i < f.size(); ++i) {
    double v = (f[i] - 1) * (f[i] - 1) - r * r;
    for (size_t j = 0; j < f.size(); ++j)
      if (j != i)
        v += f[j] * f[j];
    corner = std::min(corner, v);
    centre += (f[i] - 1 / std::sqrt(m)) * (f[i] - 1 / std::sqrt(m));
  }
  return std::min(corner, centre);
}

// One study's trials: objective values and constraint violations.
struct study {
  std::vector<tune::point> values;
  std::vector<double> violations;
};

study run_dtrain(const problem& p, const std::string& searcher_name, int trials, uint64_t seed) {
  tune::space s;
  char name[16];
  for (int i = 0; i < p.variables; ++i) {
    std::snprintf(name, sizeof name, "x%02d", i);
    s.add(name, tune::uniform(0, 1));
  }
  std::vector<tune::objective> objectives;
  for (int k = 0; k < p.objectives; ++k)
    objectives.push_back({"f" + std::to_string(k), tune::mode::min});
  std::vector<tune::constraint> constraints;
  if (p.constrained)
    constraints = {{"violation", 0.0}};
  std::unique_ptr<tune::searcher> searcher;
  if (searcher_name == "tpe") {
    tune::tpe_options o;
    o.metric = "f0";
    o.direction = tune::mode::min;
    o.objectives = objectives;
    o.constraints = constraints;
    o.num_samples = trials;
    o.seed = seed;
    searcher = tune::make_tpe(s, o);
  } else {
    tune::nsga2_options o;
    o.objectives = objectives;
    o.constraints = constraints;
    o.num_samples = trials;
    o.seed = seed;
    searcher = tune::make_nsga2(s, o);
  }
  study out;
  for (int t = 0; t < trials; ++t) {
    const std::string id = "t" + std::to_string(t);
    auto next = searcher->suggest(id);
    std::vector<double> x;
    for (const auto& [key, v] : next.configuration)
      x.push_back(std::get<double>(v));
    const auto f = p.name == "zdt1" ? zdt1(x) : dtlz2(x);
    tune::report r{id, 1, {}};
    for (size_t k = 0; k < f.size(); ++k)
      r.metrics["f" + std::to_string(k)] = f[k];
    const double violation = p.constrained ? c2_violation(f) : 0.0;
    r.metrics["violation"] = violation;
    searcher->on_result(r);
    searcher->on_end(id, tune::trial_end::completed);
    out.values.push_back(f);
    out.violations.push_back(violation);
  }
  return out;
}

// The hypervolume of the study's feasible trials inside the reference.
double hypervolume(const study& s, const tune::point& reference) {
  std::vector<tune::point> inside;
  for (size_t i = 0; i < s.values.size(); ++i) {
    bool in = s.violations[i] <= 0;
    for (size_t k = 0; k < reference.size() && in; ++k)
      in = s.values[i][k] <= reference[k];
    if (in)
      inside.push_back(s.values[i]);
  }
  auto hv = tune::hypervolume(inside, reference);
  return hv ? *hv : NAN;
}

double feasible_fraction(const study& s) {
  double n = 0;
  for (double v : s.violations)
    n += v <= 0;
  return s.violations.empty() ? NAN : n / static_cast<double>(s.violations.size());
}

// peer[problem][seed] = the study's trials.
using peer_studies = std::map<std::string, std::map<int, study>>;

// One Optuna process: the seeds s with s % jobs == job.
std::string run_peer_shard(int seeds, int trials, const std::string& sampler,
                           const std::string& names, int job, int jobs, peer_studies& out,
                           double& peer_seconds) {
  const std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/peer/optuna_nsga2.py";
  std::string version;
  const bool started = bench::for_each_output_line(
      "/usr/bin/python3 " + script + " --seeds " + std::to_string(seeds) + " --trials " +
          std::to_string(trials) + " --sampler " + sampler + " --problems " + names +
          " --shard " + std::to_string(job) + "/" + std::to_string(jobs),
      [&](const char* line) {
        std::istringstream in(line);
        std::string kind, name;
        int seed = 0;
        in >> kind;
        if (kind == "trial") {
          in >> name >> seed;
          std::vector<double> numbers;
          std::string word;
          while (in >> word)
            numbers.push_back(std::stod(word));
          study& s = out[name][seed];
          s.violations.push_back(numbers.back());
          numbers.pop_back();
          s.values.push_back(numbers);
        } else if (kind == "study") {
          double took = 0;
          in >> name >> seed >> took;
          peer_seconds += took;
        } else if (kind == "peer") {
          in >> name >> version;
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

// Optuna's studies, over `jobs` processes at once; each process's reader
// fills its own map, merged after all have ended.
std::string run_peer(int seeds, int trials, const std::string& sampler,
                     const std::string& names, int jobs, peer_studies& out,
                     double& peer_seconds) {
  std::vector<peer_studies> parts(static_cast<size_t>(jobs));
  std::vector<double> seconds(static_cast<size_t>(jobs), 0.0);
  std::vector<std::string> errors(static_cast<size_t>(jobs));
  std::vector<std::thread> readers;
  for (int j = 0; j < jobs; ++j)
    readers.emplace_back([&, j] {
      const auto k = static_cast<size_t>(j);
      errors[k] = run_peer_shard(seeds, trials, sampler, names, j, jobs, parts[k], seconds[k]);
    });
  for (auto& r : readers)
    r.join();
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!errors[k].empty())
      return errors[k];
    peer_seconds += seconds[k];
    for (auto& [name, by_seed] : parts[k])
      for (auto& [seed, st] : by_seed)
        out[name][seed] = std::move(st);
  }
  return "";
}

using bench::median_interval;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain NSGA-II against Optuna 3.1's NSGAIISampler"};
  int seeds = 50, trials = 200;
  int peer_jobs = 1;
  bool no_peer = false;
  std::string searcher = "nsga2", names = "zdt1,dtlz2,c2dtlz2";
  app.add_option("--seeds", seeds, "studies per problem");
  app.add_option("--trials", trials, "trials per study");
  app.add_flag("--no-peer", no_peer, "skip Optuna");
  app.add_option("--peer-jobs", peer_jobs, "Optuna processes at once (seeds split between them)")
      ->check(CLI::Range(1, 64));
  app.add_option("--problems", names, "comma-separated: zdt1, dtlz2, c2dtlz2")
      ->check([](const std::string& v) {
        return problems(v).empty() ? std::string("no known problem in '" + v + "'") : std::string();
      });
  app.add_option("--searcher", searcher, "nsga2 or tpe (multi-objective TPE)")
      ->check(CLI::IsMember({"nsga2", "tpe"}));
  CLI11_PARSE(app, argc, argv);
  const char* who = searcher == "tpe" ? "TPE" : "NSGA-II";

  peer_studies optuna;
  double peer_seconds = 0;
  const auto peer_start = clock_type::now();
  const std::string skipped =
      no_peer ? "--no-peer"
              : run_peer(seeds, trials, searcher, names, peer_jobs, optuna, peer_seconds);
  const double peer_wall = seconds_since(peer_start);

  std::printf("%s against Optuna 3.1's: median over %d seeds of the hypervolume of %d trials "
              "(larger is better)\n",
              who, seeds, trials);
  std::printf("%-9s %-16s %11s %11s %22s %9s %9s %5s\n", "problem", "reference", "dtrain",
              "Optuna", "Optuna 90% ci", "feas dt", "feas opt", "same");
  bool goal = skipped.empty();
  std::string summary;
  double dtrain_seconds = 0;
  for (const problem& p : problems(names)) {
    std::vector<double> ours, theirs, ours_feasible, theirs_feasible;
    const auto start = clock_type::now();
    for (int s = 0; s < seeds; ++s) {
      const study st = run_dtrain(p, searcher, trials, static_cast<uint64_t>(s));
      ours.push_back(hypervolume(st, p.reference));
      ours_feasible.push_back(feasible_fraction(st));
    }
    dtrain_seconds += seconds_since(start);
    for (const auto& [seed, st] : optuna[p.name]) {
      theirs.push_back(hypervolume(st, p.reference));
      theirs_feasible.push_back(feasible_fraction(st));
    }
    const double m_ours = bench::median(ours);
    const double m_theirs = theirs.empty() ? NAN : bench::median(theirs);
    const auto [lo, hi] = median_interval(theirs);
    std::string ref;
    for (double r : p.reference) {
      char number[32];
      std::snprintf(number, sizeof number, "%g", r);
      ref += (ref.empty() ? "(" : ", ") + std::string(number);
    }
    ref += ")";
    const double f_ours = bench::median(ours_feasible);
    const double f_theirs = theirs_feasible.empty() ? NAN : bench::median(theirs_feasible);
    char ci[64];
    std::snprintf(ci, sizeof ci, "[%.4f, %.4f]", lo, hi);
    // Seeds whose hypervolume equals Optuna's: both sides draw NumPy's
    // stream, so equal seeds chose the same trials.
    int same = 0;
    for (const auto& [seed, st] : optuna[p.name])
      if (seed >= 0 && seed < seeds) {
        const double a = ours[static_cast<size_t>(seed)], b = hypervolume(st, p.reference);
        same += std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
      }
    std::printf("%-9s %-16s %11.4f %11.4f %22s %9.3f %9.3f %5d\n", p.name.c_str(), ref.c_str(),
                m_ours, m_theirs, ci, f_ours, f_theirs, same);
    const bool inside = m_ours >= lo && m_ours <= hi;
    const bool above = m_ours > hi;
    const bool feasible_met = !p.constrained || f_ours >= f_theirs;
    goal = goal && (inside || above) && feasible_met;
    char line[200];
    std::snprintf(line, sizeof line, "%s %.4f vs %.4f (%s)%s", p.name.c_str(), m_ours, m_theirs,
                  inside ? "inside" : above ? "above" : "BELOW",
                  p.constrained ? (feasible_met ? ", feasible fraction met" : ", feasible fraction NOT met")
                                : "");
    summary += (summary.empty() ? "" : "; ") + std::string(line);
  }
  std::printf("(hypervolume of the study's feasible trials inside the reference point, "
              "objectives minimized; 90%% ci: a bootstrap interval of Optuna's median over the "
              "seeds; feas: median fraction of feasible trials; same: seeds whose hypervolume equals "
              "Optuna's, the same trials chosen)\n");
  std::printf("dtrain: %.2f s for %d studies; Optuna: %.2f s in its studies (%.1f s with Python's "
              "start, %d process%s at once)%s\n",
              dtrain_seconds, static_cast<int>(problems(names).size()) * seeds, peer_seconds,
              peer_wall, peer_jobs, peer_jobs == 1 ? "" : "es",
              skipped.empty() ? "" : (", skipped: " + skipped).c_str());
  std::printf("summary: dtrain %s vs Optuna %s median hypervolume: %s; goal (inside "
              "Optuna's interval or above it, feasible fraction at least Optuna's) %s\n",
              who, who, summary.c_str(), goal ? "met" : "NOT met");
  return 0;
}
