#!/usr/bin/python3
"""Accuracy baselines on scikit-learn's bundled tables, beside `dtrain train`.

usage: /usr/bin/python3 sklearn_baseline.py DATADIR [--tables digits breast_cancer wine]

DATADIR is prepare.py's OUTDIR; each table is read from
DATADIR/sklearn/<table>_{train,test}.csv (header row, features as floats, the
integer class in the last column `target`). Inputs are standardised with the
train split's mean and std (sklearn StandardScaler, applied to both splits).
Two models, both one hidden layer of 64 ReLU units:
  sklearn  MLPClassifier(hidden_layer_sizes=(64,), max_iter=300,
           random_state=0), everything else default (Adam lr 1e-3, batch
           min(200, n), L2 alpha 1e-4, early stopping off)
  torch    Linear(F, 64) -> ReLU -> Linear(64, K), cross-entropy, Adam lr 1e-3,
           30 epochs, batch 32, shuffled each epoch, torch.manual_seed(0),
           no weight decay, 1 thread
Prints per table
  <table> (<n_train>+<n_test> rows, F features, K classes): sklearn MLP <acc>, torch MLP <acc>
and the wall time of each fit.
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler


def read_table(path):
    """(features float64 [N,F], target int64 [N]) of a prepare.py table CSV."""
    with open(path) as f:
        header = f.readline().rstrip("\n").split(",")
    if not header or header[-1] != "target":
        raise ValueError(f"{path}: the last column is '{header[-1]}', expected 'target'")
    a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if a.shape[1] != len(header):
        raise ValueError(f"{path}: rows have {a.shape[1]} fields, the header has {len(header)}")
    y = a[:, -1]
    if not np.all(y == np.round(y)) or y.min() < 0:
        raise ValueError(f"{path}: column 'target' holds non-class values")
    return a[:, :-1], y.astype(np.int64)


def fit_sklearn(x_tr, y_tr, x_te, y_te):
    clf = MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf.fit(x_tr, y_tr)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return float((clf.predict(x_te) == y_te).mean()), clf.n_iter_, converged


def fit_torch(x_tr, y_tr, x_te, y_te, classes, epochs=30, batch=32):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(x_tr.shape[1], 64), nn.ReLU(), nn.Linear(64, classes))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xt = torch.tensor(x_tr, dtype=torch.float32)
    yt = torch.tensor(y_tr, dtype=torch.int64)
    gen = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        order = torch.randperm(len(yt), generator=gen)
        for s in range(0, len(yt), batch):
            idx = order[s:s + batch]
            opt.zero_grad()
            loss_fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
    with torch.no_grad():
        pred = model(torch.tensor(x_te, dtype=torch.float32)).argmax(dim=1).numpy()
    return float((pred == y_te).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datadir")
    ap.add_argument("--tables", nargs="+", default=["digits", "breast_cancer", "wine"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    for name in args.tables:
        base = os.path.join(args.datadir, "sklearn", name)
        x_tr, y_tr = read_table(base + "_train.csv")
        x_te, y_te = read_table(base + "_test.csv")
        if x_tr.shape[1] != x_te.shape[1]:
            raise ValueError(f"{name}: train has {x_tr.shape[1]} features, test {x_te.shape[1]}")
        scaler = StandardScaler().fit(x_tr)
        x_tr, x_te = scaler.transform(x_tr), scaler.transform(x_te)
        classes = int(max(y_tr.max(), y_te.max())) + 1
        t = time.perf_counter()
        acc_sk, iters, converged = fit_sklearn(x_tr, y_tr, x_te, y_te)
        t_sk = time.perf_counter() - t
        t = time.perf_counter()
        acc_t = fit_torch(x_tr, y_tr, x_te, y_te, classes)
        t_t = time.perf_counter() - t
        note = "" if converged else ", not converged"
        print(f"{name} ({len(y_tr)}+{len(y_te)} rows, {x_tr.shape[1]} features, "
              f"{classes} classes): sklearn MLP {acc_sk:.4f}, torch MLP {acc_t:.4f}", flush=True)
        print(f"    sklearn {iters} iterations{note}, {t_sk:.2f} s; torch 30 epochs, {t_t:.2f} s",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
