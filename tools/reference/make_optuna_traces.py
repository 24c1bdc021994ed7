#!/usr/bin/python3
"""Writes tests/tune/optuna_traces.txt: the trials Optuna 3.1's samplers
choose, seed by seed, for the searcher_traces suite
(tests/tune/searcher_traces_test.cpp). dtrain's TPE and NSGA-II searchers
draw from NumPy's RandomState stream as Optuna's samplers do, so for the
same seed and the same objective values they must choose the same trials.

Every study suggests its parameters in name order (dtrain's spaces are
ordered by name, and each parameter takes its draws in that order).
Objectives use arithmetic only, so that both sides compute the same bits.
Trials run `concurrency` at a time; the oldest running one is told first.

Format, one block per study:
  study NAME SAMPLER SEED CONCURRENCY N_OBJECTIVES CONSTRAINED
  param NAME KIND ARGS...   (float LOW HIGH | log LOW HIGH | int LOW HIGH |
                             step LOW HIGH Q | cat A B C ...)
  trial P1 P2 ...           (in param order; categories by index)
  end
SAMPLER: tpe, mvtpe (multivariate), mvtpe_liar (multivariate with the
constant liar), nsga2 (population 10).

Usage: make_optuna_traces.py [OUT]   (default tests/tune/optuna_traces.txt)
Run it with Debian's /usr/bin/python3 (optuna 3.1), from outside Optuna's
package directory. The output is deterministic.
"""
import os
import sys
import warnings

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")

CATEGORIES = ["a", "b", "c"]


def branin_like(p):
    # A polynomial with Branin's shape in its two variables (no trig, so the
    # two sides compute the same bits).
    x1, x2 = p["x1"], p["x2"]
    return (x2 - 0.129 * x1 * x1 + 1.59 * x1 - 6) ** 2 + 10 * (1 - 0.04 * x1 * x1) + 10


def mixed(p):
    shift = {"a": 0.0, "b": 1.5, "c": 3.0}[p["kind"]]
    return (p["lr"] * 1000 - 3) ** 2 + (p["units"] - 7) ** 2 + (p["x"] - 0.4) ** 2 + shift + \
        (p["width"] - 0.75) ** 2


def sphere(p):
    return sum((p[k] - 0.3) ** 2 for k in sorted(p))


def two_objectives(p):
    x = [p[k] for k in sorted(p)]
    g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
    f1 = x[0]
    f2 = g * (1 - (x[0] / g) ** 2)  # ZDT2's front: no square root
    return [f1, f2]


def constraint(values):
    return [values[0] + values[1] - 1.2]  # feasible at or below 0


STUDIES = [
    # name, sampler, seed, concurrency, params, objective, constrained
    ("branin_tpe_0", "tpe", 0, 1, [("x1", "float", -5, 10), ("x2", "float", 0, 15)], branin_like, False),
    ("branin_tpe_1", "tpe", 1, 1, [("x1", "float", -5, 10), ("x2", "float", 0, 15)], branin_like, False),
    ("mixed_tpe", "tpe", 3, 1,
     [("kind", "cat"), ("lr", "log", 1e-4, 1e-1), ("units", "int", 1, 16),
      ("width", "step", 0.0, 2.0, 0.25), ("x", "float", 0, 1)], mixed, False),
    ("sphere_mvtpe", "mvtpe", 2, 1, [("x1", "float", 0, 1), ("x2", "float", 0, 1), ("x3", "float", 0, 1)],
     sphere, False),
    ("mixed_mvtpe", "mvtpe", 4, 1,
     [("kind", "cat"), ("lr", "log", 1e-4, 1e-1), ("units", "int", 1, 16),
      ("width", "step", 0.0, 2.0, 0.25), ("x", "float", 0, 1)], mixed, False),
    ("branin_liar", "mvtpe_liar", 5, 3, [("x1", "float", -5, 10), ("x2", "float", 0, 15)], branin_like,
     False),
    ("two_tpe", "tpe", 6, 1, [("x1", "float", 0, 1), ("x2", "float", 0, 1), ("x3", "float", 0, 1)],
     two_objectives, False),
    ("two_tpe_constrained", "tpe", 7, 1,
     [("x1", "float", 0, 1), ("x2", "float", 0, 1), ("x3", "float", 0, 1)], two_objectives, True),
    ("two_nsga2", "nsga2", 8, 1,
     [("x1", "float", 0, 1), ("x2", "float", 0, 1), ("x3", "float", 0, 1), ("x4", "float", 0, 1)],
     two_objectives, False),
    ("two_nsga2_constrained", "nsga2", 9, 1,
     [("x1", "float", 0, 1), ("x2", "float", 0, 1), ("x3", "float", 0, 1), ("x4", "float", 0, 1)],
     two_objectives, True),
]
TRIALS = 60


def suggest(trial, param):
    name, kind = param[0], param[1]
    if kind == "float":
        return trial.suggest_float(name, param[2], param[3])
    if kind == "log":
        return trial.suggest_float(name, param[2], param[3], log=True)
    if kind == "int":
        return trial.suggest_int(name, param[2], param[3])
    if kind == "step":
        return trial.suggest_float(name, param[2], param[3], step=param[4])
    return trial.suggest_categorical(name, CATEGORIES)


def make_sampler(kind, seed, constrained):
    constraints = (lambda t: t.user_attrs["constraint"]) if constrained else None
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(population_size=10, seed=seed,
                                             constraints_func=constraints)
    return optuna.samplers.TPESampler(seed=seed, multivariate=kind.startswith("mvtpe"),
                                      constant_liar=kind.endswith("_liar"),
                                      constraints_func=constraints)


def run(study_spec, out):
    name, kind, seed, concurrency, params, objective, constrained = study_spec
    probe = objective({p[0]: (CATEGORIES[0] if p[1] == "cat" else p[2]) for p in params})
    n_objectives = len(probe) if isinstance(probe, list) else 1
    study = optuna.create_study(sampler=make_sampler(kind, seed, constrained),
                                directions=["minimize"] * n_objectives)
    out.write("study %s %s %d %d %d %d\n" % (name, kind, seed, concurrency, n_objectives,
                                             int(constrained)))
    for p in params:
        out.write("param %s\n" % " ".join(str(v) for v in p))
    running = []
    asked = 0
    rows = []
    while asked < TRIALS or running:
        if asked < TRIALS and len(running) < concurrency:
            trial = study.ask()
            values = {p[0]: suggest(trial, p) for p in params}
            row = []
            for p in params:
                v = values[p[0]]
                row.append(str(CATEGORIES.index(v)) if p[1] == "cat" else repr(float(v)))
            rows.append(row)
            result = objective(values)
            if constrained:
                trial.set_user_attr("constraint", constraint(result))
            running.append((trial, result))
            asked += 1
            continue
        trial, result = running.pop(0)
        study.tell(trial, result)
    for row in rows:
        out.write("trial %s\n" % " ".join(row))
    out.write("end\n")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "tune", "optuna_traces.txt")
    with open(path, "w") as out:
        out.write("# Written by tools/reference/make_optuna_traces.py with optuna %s\n"
                  % optuna.__version__)
        for spec in STUDIES:
            run(spec, out)


if __name__ == "__main__":
    main()
