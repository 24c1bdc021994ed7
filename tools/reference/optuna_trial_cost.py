#!/usr/bin/python3
"""Optuna 3.1's cost per trial, for dtrain-bench-tune's reference rows:
500 trials of a trivial objective (2 suggested floats, 10 reports with
should_prune under SuccessiveHalvingPruner), in memory and with SQLite (a
temporary file). Prints `<storage> <trials> trials: <ms> ms/trial` lines
(or one `skipped: <why>` line).

usage: /usr/bin/python3 optuna_trial_cost.py [trials]"""
import os
import sys
import tempfile
import time

try:
    import optuna
except ImportError as e:
    print(f"skipped: {e} (apt-get install python3-optuna)")
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


trials = int(sys.argv[1]) if len(sys.argv) > 1 else 500
print(f"version {optuna.__version__}")
print(f"in-memory {trials} trials: {cost(None, trials):.3f} ms/trial", flush=True)
with tempfile.TemporaryDirectory() as d:
    url = "sqlite:///" + os.path.join(d, "study.db")
    print(f"sqlite {trials} trials: {cost(url, trials):.3f} ms/trial")
