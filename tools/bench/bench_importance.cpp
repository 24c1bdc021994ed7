// Hyperparameter importance on a large sweep: 1,000 trials x 8 parameters
// (five uniform, a log range, an integer, a 3-way choice; falling effects,
// one dummy). Times dtrain's fast method (median of runs) and its fANOVA,
// then runs Optuna 3.1's FanovaImportanceEvaluator on the same trials
// (tools/peer/optuna_fanova.py, Debian's python3-optuna and python3-sklearn)
// and reports its time and the Spearman rank agreement of both methods with
// it. The goal (issue 30): the fast method in at most 20 ms.
//
//     dtrain-bench-importance [--trials 1000] [--runs 21] [--no-peer]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_util.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/tune/importance.hpp"

namespace {

using namespace dtrain::tune;
using clock_type = std::chrono::steady_clock;

const char* choices[] = {"adam", "sgd", "rmsprop"};

space bench_space() {
  space s;
  for (int i = 0; i < 5; ++i)
    s.add("x" + std::to_string(i), uniform(0, 1));
  s.add("lr", loguniform(1e-4, 1e-1));
  s.add("width", randint(16, 256));
  s.add("opt", choice({std::string("adam"), std::string("sgd"), std::string("rmsprop")}));
  return s;
}

std::vector<importance_trial> bench_trials(int n, uint64_t seed) {
  dtrain::rng r(seed);
  const double weights[] = {3, 2, 1.5, 1, 0};  // x4 is the dummy
  std::vector<importance_trial> out;
  for (int t = 0; t < n; ++t) {
    importance_trial trial;
    trial.id = std::to_string(t);
    double v = 0;
    for (int i = 0; i < 5; ++i) {
      const double x = r.uniform_double();
      trial.configuration["x" + std::to_string(i)] = x;
      v += weights[i] * std::sin(3 * x);
    }
    const double lr = std::exp(std::log(1e-4) + r.uniform_double() * std::log(1e3));
    const auto width = static_cast<int64_t>(16 + r.below(241));
    const int k = static_cast<int>(r.below(3));
    trial.configuration["lr"] = lr;
    trial.configuration["width"] = width;
    trial.configuration["opt"] = std::string(choices[k]);
    v += 10 * lr + 0.003 * static_cast<double>(width) + 0.8 * k + 0.05 * r.normal();
    trial.value = v;
    out.push_back(std::move(trial));
  }
  return out;
}

// The trials in tools/peer/optuna_fanova.py's format.
void write_trials(const std::string& path, const std::vector<importance_trial>& trials) {
  std::ofstream out(path);
  out << "case bench\n";
  for (int i = 0; i < 5; ++i)
    out << "param x" << i << " uniform 0 1\n";
  out << "param lr log 0.0001 0.1\nparam width int 16 256\nparam opt choice adam sgd rmsprop\n";
  char buf[64];
  for (const auto& t : trials) {
    std::snprintf(buf, sizeof buf, "%.17g", t.value);
    out << "trial " << buf;
    for (const char* p : {"x0", "x1", "x2", "x3", "x4", "lr", "width", "opt"})
      out << ' ' << to_string(t.configuration.at(p));
    out << '\n';
  }
  out << "end\n";
}

std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double above = 0, same = 0;
    for (double y : x)
      above += y > x[i], same += y == x[i];
    r[i] = above + (same + 1) / 2;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return sab / std::sqrt(saa * sbb);
}

struct timed {
  std::vector<parameter_importance> result;
  double median_ms = 0;
};

timed time_method(const space& s, const std::vector<importance_trial>& trials,
                  importance_method m, int runs) {
  importance_options o;
  o.method = m;
  timed out;
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto start = clock_type::now();
    auto r = evaluate_importance(s, trials, o);
    ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
    if (!r) {
      std::fprintf(stderr, "error: %s\n", r.error().message().c_str());
      std::exit(1);
    }
    out.result = std::move(*r);
  }
  out.median_ms = dtrain::bench::median(ms);
  return out;
}

// Optuna's importances and seconds; empty when the peer could not run.
std::map<std::string, double> run_peer(const std::string& file, double& seconds,
                                       double& cpu_seconds) {
  std::map<std::string, double> out;
  const std::string script = std::string(DTRAIN_SOURCE_DIR) + "/tools/peer/optuna_fanova.py";
  dtrain::bench::for_each_output_line("/usr/bin/python3 " + script + " " + file,
                                      [&](const char* line) {
    char name[64], param[64];
    double v = 0;
    if (std::sscanf(line, "importance %63s %63s %lf", name, param, &v) == 3)
      out[param] = v;
    else if (std::sscanf(line, "seconds %63s %lf", name, &v) == 2)
      seconds = v;
    else if (std::sscanf(line, "cpu_seconds %63s %lf", name, &v) == 2)
      cpu_seconds = v;
    else if (std::strncmp(line, "case", 4) != 0)
      std::fprintf(stderr, "peer: %s", line);
  });
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"hyperparameter importance: dtrain fast and fANOVA beside Optuna 3.1's fANOVA"};
  int n = 1000, runs = 21;
  bool no_peer = false;
  app.add_option("--trials", n, "trials (default 1000)");
  app.add_option("--runs", runs, "timed runs of the fast method (default 21; fANOVA: a third)");
  app.add_flag("--no-peer", no_peer, "skip Optuna");
  CLI11_PARSE(app, argc, argv);

  const space s = bench_space();
  const auto trials = bench_trials(n, 30);
  const timed fast = time_method(s, trials, importance_method::fast, runs);
  const timed fanova = time_method(s, trials, importance_method::fanova, std::max(1, runs / 3));

  std::map<std::string, double> optuna;
  double optuna_seconds = 0, optuna_cpu_seconds = 0;
  if (!no_peer) {
    const std::string file = "/tmp/bench_importance." + std::to_string(getpid()) + ".txt";
    write_trials(file, trials);
    optuna = run_peer(file, optuna_seconds, optuna_cpu_seconds);
    std::remove(file.c_str());
  }
  std::map<std::string, double> f, a;
  for (auto& p : fast.result)
    f[p.name] = p.importance;
  for (auto& p : fanova.result)
    a[p.name] = p.importance;
  std::printf("%-8s %10s %10s %10s\n", "param", "fast", "fanova", "optuna");
  std::vector<double> vf, va, vo;
  for (auto& p : fanova.result) {
    const bool peer = optuna.count(p.name) > 0;
    std::printf("%-8s %10.4f %10.4f %10s\n", p.name.c_str(), f[p.name], a[p.name],
                peer ? std::to_string(optuna[p.name]).substr(0, 6).c_str() : "-");
    vf.push_back(f[p.name]);
    va.push_back(a[p.name]);
    vo.push_back(peer ? optuna[p.name] : 0);
  }
  std::printf("\n%d trials x 8 parameters: fast %.2f ms (median of %d), fanova %.1f ms\n", n,
              fast.median_ms, runs, fanova.median_ms);
  if (optuna.size() == 8) {
    double worst_fast = 0, worst_fanova = 0;
    for (size_t i = 0; i < vo.size(); ++i) {
      worst_fast = std::max(worst_fast, std::abs(vf[i] - vo[i]));
      worst_fanova = std::max(worst_fanova, std::abs(va[i] - vo[i]));
    }
    std::printf("optuna fanova %.0f ms (%.0f ms CPU); Spearman with optuna: fast %.3f, "
                "fanova %.3f; max |difference|: fast %.4f, fanova %.4f\n",
                optuna_seconds * 1000, optuna_cpu_seconds * 1000, spearman(vf, vo), spearman(va, vo), worst_fast,
                worst_fanova);
  } else {
    std::printf("optuna: %s\n", no_peer ? "skipped (--no-peer)"
                                        : "no figures (is Debian's python3-optuna installed?)");
  }
  std::printf("summary: fast %.2f ms (goal <= 20 ms: %s)\n", fast.median_ms,
              fast.median_ms <= 20 ? "met" : "NOT met");
  return 0;
}
