#!/usr/bin/python3
"""Reference splits of Optuna 3.1's multi-objective TPE.

Prints which observations _split_observation_pairs puts below (good) and the
weights _calculate_weights_below_for_multi_objective gives them, for fixed
points, with and without constraint violations;
tests/tune/tpe_multi_objective_test.cpp requires dtrain's split to give the
same. Run with Debian's /usr/bin/python3 (python3-optuna 3.1).
"""
import numpy as np, warnings
warnings.filterwarnings("ignore")
from optuna.samplers._tpe.sampler import _split_observation_pairs, _calculate_weights_below_for_multi_objective
rs = np.random.RandomState(3)
pts = rs.rand(14, 2).round(3)
pts[5] = pts[2]  # a tie
loss = [(-float("inf"), list(p)) for p in pts]
for nb in (2, 5, 9):
    b, a = _split_observation_pairs(loss, nb, None)
    w = _calculate_weights_below_for_multi_objective(loss, b, None)
    print("points", pts.tolist()) if nb == 2 else None
    print("nb", nb, "below", b.tolist(), "weights", [repr(x) for x in w.tolist()])
viol = [0.0 if i % 3 else 0.5 + i for i in range(14)]
b, a = _split_observation_pairs(loss, 5, viol)
w = _calculate_weights_below_for_multi_objective(loss, b, viol)
print("viol", viol, "below", b.tolist(), "weights", [repr(x) for x in w.tolist()])
pts3 = rs.rand(12, 3).round(3)
loss3 = [(-float("inf"), list(p)) for p in pts3]
b, a = _split_observation_pairs(loss3, 7, None)
w = _calculate_weights_below_for_multi_objective(loss3, b, None)
print("points3", pts3.tolist()); print("nb 7 below", b.tolist(), "weights", [repr(x) for x in w.tolist()])
