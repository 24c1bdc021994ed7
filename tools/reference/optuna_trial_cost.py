#!/usr/bin/python3
"""Optuna 3.1's cost per trial, for dtrain-bench-tune's reference column:
500 trials of a trivial objective (2 suggested floats, 10 reports with
should_prune under SuccessiveHalvingPruner), in memory and with SQLite."""
import os
import sys
import tempfile
import time

try:
    import optuna
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(0)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def objective(trial):
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    for step in range(1, 11):
        trial.report(x * x + y * y + 1.0 / step, step)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return x * x + y * y


def cost(storage, trials):
    study = optuna.create_study(storage=storage, sampler=optuna.samplers.RandomSampler(seed=0),
                                pruner=optuna.pruners.SuccessiveHalvingPruner(
                                    min_resource=1, reduction_factor=2))
    start = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return 1000.0 * (time.perf_counter() - start) / trials


print(f"Optuna {optuna.__version__}, in memory: {cost(None, 500):.2f} ms/trial")
with tempfile.TemporaryDirectory() as d:
    url = "sqlite:///" + os.path.join(d, "study.db")
    print(f"Optuna {optuna.__version__}, SQLite:    {cost(url, 200):.2f} ms/trial")
