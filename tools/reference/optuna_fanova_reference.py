#!/usr/bin/python3
"""Writes the fixed trial sets of tests/tune/importance_test.cpp with Optuna
3.1's fANOVA importances of each (FanovaImportanceEvaluator(seed=0), through
tools/peer/optuna_fanova.py), as lines `optuna CASE PARAM IMPORTANCE` inside
each case. The test requires dtrain's ranking to agree (Spearman >= 0.8).

Run with Debian's /usr/bin/python3 (python3-optuna 3.1, python3-sklearn):

    tools/reference/optuna_fanova_reference.py > tests/tune/importance_reference.txt
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
import optuna_fanova  # noqa: E402


def one_matters(rng):
    """Only x1 matters much; x2 a little; dummy not at all."""
    params = [("dummy", "uniform", ["0", "1"]), ("x1", "uniform", ["0", "1"]),
              ("x2", "uniform", ["0", "1"])]
    trials = []
    for _ in range(150):
        d, x1, x2 = rng.uniform(0, 1, 3)
        value = 10 * (x1 - 0.3) ** 2 + 0.5 * x2
        trials.append((value, [repr(d), repr(x1), repr(x2)]))
    return params, trials


def mixed(rng):
    """Every kind of parameter: a log range, an integer, a choice."""
    params = [("dropout", "uniform", ["0", "0.5"]), ("dummy", "uniform", ["-1", "1"]),
              ("lr", "log", ["0.0001", "0.1"]), ("momentum", "uniform", ["0", "1"]),
              ("optimizer", "choice", ["adam", "sgd", "rmsprop"]),
              ("width", "int", ["16", "256"])]
    choices = ["adam", "sgd", "rmsprop"]
    trials = []
    for _ in range(300):
        dropout = rng.uniform(0, 0.5)
        dummy = rng.uniform(-1, 1)
        lr = math.exp(rng.uniform(math.log(1e-4), math.log(0.1)))
        momentum = rng.uniform(0, 1)
        optimizer = choices[rng.randint(3)]
        width = int(rng.randint(16, 257))
        value = (20 * lr + {"adam": 0.0, "sgd": 1.2, "rmsprop": 0.5}[optimizer]
                 + 6.0 * (dropout - 0.1) ** 2 + 0.6 * momentum + 0.002 * width
                 + rng.normal(0, 0.02))
        trials.append((value, [repr(dropout), repr(dummy), repr(lr), repr(momentum), optimizer,
                               str(width)]))
    return params, trials


def eight(rng):
    """Eight parameters of falling weight, the last two dummies."""
    weights = [4, 3, 2.5, 2, 1.5, 1, 0, 0]
    params = [("x%d" % i, "uniform", ["0", "1"]) for i in range(8)]
    trials = []
    for _ in range(250):
        x = rng.uniform(0, 1, 8)
        value = sum(w * math.sin(3 * xi) for w, xi in zip(weights, x)) + rng.normal(0, 0.05)
        trials.append((value, [repr(v) for v in x]))
    return params, trials


def main():
    rng = np.random.RandomState(30)
    print("# Optuna %s fANOVA (FanovaImportanceEvaluator(seed=0)) on fixed trial sets;" %
          optuna_fanova.optuna.__version__)
    print("# written by tools/reference/optuna_fanova_reference.py, read by "
          "tests/tune/importance_test.cpp.")
    for name, make in [("one_matters", one_matters), ("mixed", mixed), ("eight", eight)]:
        params, trials = make(rng)
        importances, _, _ = optuna_fanova.evaluate(params, trials, seed=0)
        print("case", name)
        for p, kind, args in params:
            print("param", p, kind, *args)
        for value, values in trials:
            print("trial", repr(float(value)), *values)
        for p, value in importances.items():
            print("optuna", name, p, repr(float(value)))
        print("end")


if __name__ == "__main__":
    main()
