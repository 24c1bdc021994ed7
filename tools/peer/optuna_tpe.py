#!/usr/bin/python3
"""The Optuna side of tools/bench/bench_tpe.cpp and bench_tpe_liar.cpp: Optuna
3.1's TPESampler (default settings, or multivariate, or multivariate with the
constant liar) and RandomSampler on Branin, Hartmann-6, a noisy Branin and the
10-D Rosenbrock and Sphere, in memory, one study per (function, sampler,
seed).

Samplers: tpe (the default TPESampler), random, mvtpe (multivariate=True),
mvtpe_liar (multivariate=True, constant_liar=True). With --concurrency C > 1
the trials run C at a time through ask and tell: C asks, then each time the
oldest running trial is told its value, one more ask, the order
tools/bench/bench_tpe_liar.cpp drives dtrain's searcher in.

Prints one line per study, for the benchmark to parse:
    result FUNCTION SAMPLER SEED BEST SECONDS
BEST is the smallest objective value for the noiseless functions; for the
noisy one, the noiseless value of the trial with the smallest observed
(noisy) value, which is how the benchmark judges dtrain too.

    /usr/bin/python3 tools/peer/optuna_tpe.py [--seeds 20] [--trials 50]
        [--functions branin,...] [--samplers tpe,random] [--concurrency 1]
"""
import argparse
import math
import time
import warnings

import numpy as np
import optuna

HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN_A = np.array([[10, 3, 17, 3.5, 1.7, 8],
                       [0.05, 10, 17, 0.1, 8, 14],
                       [3, 3.5, 1.7, 10, 17, 8],
                       [17, 8, 0.05, 10, 0.1, 14]])
HARTMANN_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886],
                              [2329, 4135, 8307, 3736, 1004, 9991],
                              [2348, 1451, 3522, 2883, 3047, 6650],
                              [4047, 8828, 8732, 5743, 1091, 381]])


def branin(x1, x2):
    b = 5.1 / (4 * math.pi ** 2)
    c = 5 / math.pi
    t = 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def hartmann6(x):
    x = np.asarray(x)
    inner = np.sum(HARTMANN_A * (x - HARTMANN_P) ** 2, axis=1)
    return float(-np.sum(HARTMANN_ALPHA * np.exp(-inner)))


# The 10-D benchmarks on De Jong's classic domains.
BOUNDS = {"rosenbrock10": (-2.048, 2.048), "sphere10": (-5.12, 5.12)}


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def suggest_in_name_order(trial, n, low, high):
    """x1..xn, suggested in the order of their names; returned by index."""
    names = sorted("x%d" % (i + 1) for i in range(n))
    values = {name: trial.suggest_float(name, low, high) for name in names}
    return [values["x%d" % (i + 1)] for i in range(n)]


def make_objective(function, seed):
    """The objective and a function of the study giving its judged best."""
    noise = np.random.RandomState(100000 + seed)  # the noisy Branin's noise

    def objective(trial):
        # Parameters are suggested in name order ("x1", "x10", "x2", ...), the
        # order in which dtrain's spaces draw them, so that a seed's draws
        # land on the same parameters on both sides.
        if function == "hartmann6":
            x = suggest_in_name_order(trial, 6, 0.0, 1.0)
            value = hartmann6(x)
        elif function in BOUNDS:
            low, high = BOUNDS[function]
            x = suggest_in_name_order(trial, 10, low, high)
            value = rosenbrock(x) if function == "rosenbrock10" else sum(v * v for v in x)
        else:
            x1 = trial.suggest_float("x1", -5.0, 10.0)
            x2 = trial.suggest_float("x2", 0.0, 15.0)
            value = branin(x1, x2)
        trial.set_user_attr("noiseless", value)
        if function == "noisy_branin":
            value += noise.normal(0.0, 1.0)
        return value

    def judged_best(study):
        return study.best_trial.user_attrs["noiseless"]

    return objective, judged_best


def make_sampler(name, seed):
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=name.startswith("mvtpe"),
                                      constant_liar=name.endswith("_liar"))


def run_study(study, objective, trials, concurrency):
    """Trials `concurrency` at a time: the oldest running one is told first."""
    running = []
    asked = 0
    while asked < trials or running:
        if asked < trials and len(running) < concurrency:
            trial = study.ask()
            running.append((trial, objective(trial)))
            asked += 1
            continue
        trial, value = running.pop(0)
        study.tell(trial, value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--functions", default="branin,hartmann6,noisy_branin")
    parser.add_argument("--samplers", default="tpe,random")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    print("peer optuna %s" % optuna.__version__, flush=True)
    for function in args.functions.split(","):
        for name in args.samplers.split(","):
            for seed in range(args.seeds):
                study = optuna.create_study(sampler=make_sampler(name, seed),
                                            direction="minimize")
                objective, judged_best = make_objective(function, seed)
                start = time.perf_counter()
                run_study(study, objective, args.trials, args.concurrency)
                took = time.perf_counter() - start
                print("result %s %s %d %.17g %.6f" % (function, name, seed, judged_best(study),
                                                     took), flush=True)


if __name__ == "__main__":
    main()
