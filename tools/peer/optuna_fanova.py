#!/usr/bin/python3
"""Optuna 3.1's hyperparameter importance on trials written by dtrain.

Reads trial sets in the text format below, builds one in-memory study per
set (every trial COMPLETE), runs FanovaImportanceEvaluator (sklearn's
RandomForestRegressor, 64 trees, depth 64) with the given seed and prints,
per set, the importances and the seconds get_param_importances took:

    case NAME
    importance NAME PARAM VALUE     (one per parameter)
    seconds NAME SECONDS            (wall)
    cpu_seconds NAME SECONDS        (this process's CPU time)

Input (tools/bench/bench_importance.cpp writes it; the reference script
tools/reference/optuna_fanova_reference.py writes it with the expected
numbers added):

    case NAME
    param P uniform LOW HIGH | param P int LOW HIGH | param P log LOW HIGH
    param P choice A B C ...   (choices are words)
    trial VALUE V1 V2 ...      (one value per param, in param order)
    end

Run with Debian's /usr/bin/python3 (python3-optuna 3.1, python3-sklearn).

    optuna_fanova.py FILE [--seed 0] [--method fanova|mdi]
"""
import argparse
import sys
import time
import warnings

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution


def read_cases(lines):
    """[(name, [(param, kind, args)], [(value, [values])])] from the text format."""
    cases, current = [], None
    for line in lines:
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "case":
            current = (words[1], [], [])
        elif words[0] == "param":
            current[1].append((words[1], words[2], words[3:]))
        elif words[0] == "trial":
            current[2].append((float(words[1]), words[2:]))
        elif words[0] == "end":
            cases.append(current)
            current = None
    return cases


def distribution(kind, args):
    if kind == "uniform":
        return FloatDistribution(float(args[0]), float(args[1]))
    if kind == "log":
        return FloatDistribution(float(args[0]), float(args[1]), log=True)
    if kind == "int":
        return IntDistribution(int(args[0]), int(args[1]))
    if kind == "choice":
        return CategoricalDistribution(args)
    raise ValueError("unknown parameter kind " + kind)


def param_value(kind, text):
    if kind == "int":
        return int(text)
    if kind == "choice":
        return text
    return float(text)


def study_of(params, trials):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    dists = {name: distribution(kind, args) for name, kind, args in params}
    for value, values in trials:
        chosen = {name: param_value(kind, v) for (name, kind, _), v in zip(params, values)}
        study.add_trial(optuna.trial.create_trial(params=chosen, distributions=dists, value=value))
    return study


def evaluate(params, trials, seed, method="fanova"):
    """({param: importance}, wall seconds, CPU seconds) by Optuna's evaluator."""
    study = study_of(params, trials)
    if method == "fanova":
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=seed)
    else:
        evaluator = optuna.importance.MeanDecreaseImpurityImportanceEvaluator(seed=seed)
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        importances = optuna.importance.get_param_importances(study, evaluator=evaluator)
    return dict(importances), time.perf_counter() - start, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default="fanova", choices=["fanova", "mdi"])
    args = parser.parse_args()
    with open(args.file) as f:
        cases = read_cases(f)
    for name, params, trials in cases:
        importances, seconds, cpu_seconds = evaluate(params, trials, args.seed, args.method)
        print("case", name)
        for param, value in importances.items():
            print("importance", name, param, repr(float(value)))
        print("seconds", name, repr(seconds))
        print("cpu_seconds", name, repr(cpu_seconds))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
