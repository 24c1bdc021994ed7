#!/usr/bin/python3
"""Writes tests/tune/pareto_cases.txt: Optuna 3.1's answers on fixed point
sets, for the pareto suite (tests/tune/pareto_test.cpp) to compare with
dtrain's pareto.hpp.

Every point is in "minimize" space (all directions minimize). Kinds:
  hypervolume  optuna._hypervolume.WFG().compute(points, reference)
  sort         NSGAIISampler._fast_non_dominated_sort (fronts, in its order)
  crowding     optuna.samplers.nsgaii._sampler._calc_crowding_distance
  elite        NSGAIISampler._select_elite_population (trial numbers, in order)
  front        optuna.study._multi_objective._get_pareto_front_trials_by_trials
With constraints, a point line carries its constraint values after ';'
and sort/elite use _constrained_dominates (a constraints_func is set).

Format, one block per case:
  case NAME KIND [SIZE]        (SIZE: elite's population_size)
  reference r1 r2 ...          (hypervolume only)
  point v1 v2 ... [; c1 c2 ...]
  expect ...                   (hypervolume: the value; crowding: one per
                                point; elite, front: point indices; sort:
                                fronts separated by '|')
  end
The output is deterministic (seeded): re-running rewrites the same file.

Usage: make_pareto_cases.py [OUT]   (default tests/tune/pareto_cases.txt)
Run it with Debian's /usr/bin/python3 (optuna 3.1), from outside Optuna's
package directory.
"""
import os
import sys
import warnings

import numpy as np
import optuna
from optuna._hypervolume import WFG
from optuna.samplers.nsgaii._sampler import _calc_crowding_distance
from optuna.study._multi_objective import _get_pareto_front_trials_by_trials

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")


def fmt(v):
    return repr(float(v))


def study_of(points, constraints):
    """An in-memory study whose trial i has values points[i] (and
    constraint values constraints[i])."""
    n_obj = len(points[0])
    study = optuna.create_study(directions=["minimize"] * n_obj)
    for i, p in enumerate(points):
        attrs = {}
        if constraints is not None:
            attrs["constraints"] = tuple(float(c) for c in constraints[i])
        study.add_trial(
            optuna.trial.create_trial(values=[float(v) for v in p], system_attrs=attrs)
        )
    return study


def sampler_of(size, constraints):
    func = (lambda t: t.system_attrs["constraints"]) if constraints is not None else None
    return optuna.samplers.NSGAIISampler(population_size=size, constraints_func=func)


def block(out, name, kind, points, constraints=None, size=None, reference=None, expect=""):
    out.append("case %s %s%s" % (name, kind, "" if size is None else " %d" % size))
    if reference is not None:
        out.append("reference " + " ".join(fmt(r) for r in reference))
    for i, p in enumerate(points):
        line = "point " + " ".join(fmt(v) for v in p)
        if constraints is not None:
            line += " ; " + " ".join(fmt(c) for c in constraints[i])
        out.append(line)
    out.append("expect " + expect)
    out.append("end")


def hypervolume_cases(out, rng):
    for dim, n in [(2, 12), (2, 40), (3, 8), (3, 40), (4, 10), (5, 8)]:
        pts = rng.rand(n, dim)
        pts[n // 3] = pts[n // 4]  # a duplicate
        ref = np.full(dim, 1.1)
        value = WFG().compute(pts.copy(), ref.copy())
        block(out, "hv_%dd_%d" % (dim, n), "hypervolume", pts, reference=ref, expect=fmt(value))
    # Integer points with ties on every axis.
    pts = rng.randint(0, 4, size=(25, 3)).astype(float)
    ref = np.full(3, 5.0)
    block(out, "hv_3d_ties", "hypervolume", pts, reference=ref,
          expect=fmt(WFG().compute(pts.copy(), ref.copy())))


def sort_cases(out, rng):
    for name, pts, cons in [
        ("sort_2d_ties", rng.randint(0, 5, size=(30, 2)).astype(float), None),
        ("sort_3d", rng.rand(40, 3), None),
        ("sort_2d_constrained", rng.randint(0, 5, size=(30, 2)).astype(float),
         rng.randint(-2, 3, size=(30, 2)).astype(float)),
    ]:
        study = study_of(pts, cons)
        fronts = sampler_of(2, cons)._fast_non_dominated_sort(
            list(study.trials), study.directions)
        expect = " | ".join(" ".join(str(t.number) for t in f) for f in fronts)
        block(out, name, "sort", pts, constraints=cons, expect=expect)


def crowding_cases(out, rng):
    inf = float("inf")
    pts = rng.randint(0, 6, size=(12, 2)).astype(float)
    pts[3] = [inf, 2.0]
    pts[7] = [-inf, 5.0]
    for name, p in [("crowding_2d", rng.rand(15, 2)), ("crowding_3d", rng.rand(15, 3)),
                    ("crowding_inf_ties", pts),
                    ("crowding_all_equal", np.ones((5, 2)))]:
        study = study_of(p, None)
        dist = _calc_crowding_distance(list(study.trials))
        block(out, name, "crowding", p,
              expect=" ".join(fmt(dist[i]) for i in range(len(p))))


def elite_cases(out, rng):
    for name, size, pts, cons in [
        ("elite_2d", 20, rng.randint(0, 8, size=(45, 2)).astype(float), None),
        ("elite_3d", 25, rng.rand(50, 3), None),
        ("elite_2d_constrained", 20, rng.rand(45, 2),
         np.where(rng.rand(45, 1) < 0.6, -rng.rand(45, 1), rng.rand(45, 1))),
        ("elite_exact_fit", 10, np.array([[float(i), float(10 - i)] for i in range(10)] +
                                         [[5.0, 9.0]] * 5), None),
    ]:
        study = study_of(pts, cons)
        elite = sampler_of(size, cons)._select_elite_population(study, list(study.trials))
        block(out, name, "elite", pts, constraints=cons, size=size,
              expect=" ".join(str(t.number) for t in elite))


def front_cases(out, rng):
    for name, pts in [("front_2d", rng.randint(0, 6, size=(30, 2)).astype(float)),
                      ("front_3d", rng.rand(30, 3))]:
        study = study_of(pts, None)
        front = _get_pareto_front_trials_by_trials(study.trials, study.directions)
        block(out, name, "front", pts,
              expect=" ".join(str(t) for t in sorted(t.number for t in front)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "..", "tests", "tune", "pareto_cases.txt")
    rng = np.random.RandomState(30)
    out = ["# Generated by tools/reference/make_pareto_cases.py with optuna " +
           optuna.__version__ + "; do not edit."]
    hypervolume_cases(out, rng)
    sort_cases(out, rng)
    crowding_cases(out, rng)
    elite_cases(out, rng)
    front_cases(out, rng)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
