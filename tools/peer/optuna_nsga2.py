#!/usr/bin/python3
"""The Optuna side of tools/bench/bench_nsga2.cpp: Optuna 3.1's
NSGAIISampler (default settings: population 50, crossover
UniformCrossover(0.5) with probability 0.9, mutation 1/n) on ZDT1 (30
variables), DTLZ2 (3 objectives, 12 variables) and C2-DTLZ2 (DTLZ2 with
its constraint, r = 0.4), in memory, one study per (problem, seed),
trials one at a time.

Prints, for the benchmark to parse (it computes the hypervolumes itself,
with the same code for both sides):
    trial PROBLEM SEED F1 F2 [F3] VIOLATION     (VIOLATION <= 0: feasible)
    study PROBLEM SEED SECONDS
    peer optuna VERSION

    /usr/bin/python3 tools/peer/optuna_nsga2.py [--seeds 50] [--trials 200]
        [--shard K/N]   (only the seeds s with s % N == K)
"""
import argparse
import math
import time
import warnings

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


def zdt1(x):
    g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
    return [x[0], g * (1 - math.sqrt(x[0] / g))]


def dtlz2(x, m=3):
    g = sum((xi - 0.5) ** 2 for xi in x[m - 1:])
    f = []
    for i in range(m):
        v = 1 + g
        for j in range(m - 1 - i):
            v *= math.cos(x[j] * math.pi / 2)
        if i > 0:
            v *= math.sin(x[m - 1 - i] * math.pi / 2)
        f.append(v)
    return f


def c2_violation(f, r=0.4):
    """C2-DTLZ2 (Jain and Deb 2014): feasible inside a sphere of radius r
    around a point of the front or around its centre; > 0 violated."""
    m = len(f)
    near_corner = min((fi - 1) ** 2 + sum(fj ** 2 for j, fj in enumerate(f) if j != i) - r ** 2
                      for i, fi in enumerate(f))
    centre = sum((fi - 1 / math.sqrt(m)) ** 2 for fi in f) - r ** 2
    return min(near_corner, centre)


PROBLEMS = {
    "zdt1": (30, zdt1, False),
    "dtlz2": (12, dtlz2, False),
    "c2dtlz2": (12, dtlz2, True),
}


def run(name, seed, trials, sampler_name):
    n, f, constrained = PROBLEMS[name]

    def objective(trial):
        x = [trial.suggest_float("x%02d" % i, 0, 1) for i in range(n)]
        values = f(x)
        trial.set_user_attr("violation", c2_violation(values) if constrained else 0.0)
        return values

    constraints = (lambda t: [t.user_attrs["violation"]]) if constrained else None
    if sampler_name == "tpe":  # TPESampler on several objectives (Optuna 3.1's MOTPE)
        sampler = optuna.samplers.TPESampler(seed=seed, constraints_func=constraints)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed, constraints_func=constraints)
    n_obj = 2 if name == "zdt1" else 3
    study = optuna.create_study(directions=["minimize"] * n_obj, sampler=sampler)
    start = time.time()
    study.optimize(objective, n_trials=trials)
    took = time.time() - start
    for t in study.trials:
        print("trial %s %d %s %r" % (name, seed, " ".join(repr(v) for v in t.values),
                                     t.user_attrs["violation"]))
    print("study %s %d %.3f" % (name, seed, took), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--problems", default="zdt1,dtlz2,c2dtlz2")
    ap.add_argument("--sampler", default="nsga2", choices=["nsga2", "tpe"])
    ap.add_argument("--shard", default="0/1", help="K/N: the seeds s with s %% N == K")
    a = ap.parse_args()
    shard, shards = (int(v) for v in a.shard.split("/"))
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("peer optuna %s" % optuna.__version__, flush=True)
    for name in a.problems.split(","):
        for seed in range(shard, a.seeds, shards):
            run(name, seed, a.trials, a.sampler)


if __name__ == "__main__":
    main()
