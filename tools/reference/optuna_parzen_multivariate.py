#!/usr/bin/python3
"""Reference log densities of Optuna 3.1's multivariate Parzen estimator.

tests/tune/tpe_searcher_test.cpp (the_joint_estimator_matches_optuna_3_1s_
multivariate_log_densities) requires dtrain's joint estimator to give these
numbers to 1e-12. Run with Debian's /usr/bin/python3 (python3-optuna 3.1):
    /usr/bin/python3 tools/reference/optuna_parzen_multivariate.py
"""
import numpy as np, warnings
warnings.filterwarnings("ignore")
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, _ParzenEstimatorParameters
from optuna.samplers._tpe.sampler import default_weights
from optuna import distributions as D
P = _ParzenEstimatorParameters(True, 1.0, True, False, default_weights, True)
space = {"a": D.FloatDistribution(-5, 10), "b": D.IntDistribution(1, 8),
         "c": D.FloatDistribution(1e-4, 1, log=True), "d": D.CategoricalDistribution(["x", "y", "z"])}
obs = {"a": np.array([1.0, 2.5, -3.0, 7.5]), "b": np.array([2, 5, 8, 3]),
       "c": np.array([0.001, 0.01, 0.5, 0.02]), "d": np.array([0, 2, 2, 1])}
pe = _ParzenEstimator(obs, space, P)
pts = {"a": np.array([1.0, 6.0]), "b": np.array([2, 7]), "c": np.array([0.002, 0.3]), "d": np.array([2, 0])}
print([repr(v) for v in (pe.log_pdf(pts)).tolist()])
# 2-D float over 30 observations (weights ramp)
sp2 = {"x": D.FloatDistribution(0, 1), "y": D.FloatDistribution(-2, 2)}
xs = np.array([(i * 7 % 30) / 30.0 for i in range(30)]); ys = np.array([((i * 11) % 30) / 7.5 - 2 for i in range(30)])
pe2 = _ParzenEstimator({"x": xs, "y": ys}, sp2, P)
print([repr(v) for v in (pe2.log_pdf({"x": np.array([0.25]), "y": np.array([0.5])})).tolist()])
pe3 = _ParzenEstimator({"x": np.array([]), "y": np.array([])}, sp2, P)
print([repr(v) for v in (pe3.log_pdf({"x": np.array([0.25]), "y": np.array([0.5])})).tolist()])
