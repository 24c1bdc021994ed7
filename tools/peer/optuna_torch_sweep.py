#!/usr/bin/python3
"""The peer of `dtrain tune experiments/fashion_mnist_asha.yaml`: the same
sweep with Optuna 3.1 driving PyTorch (Debian's python3-optuna and
python3-torch 1.13; run with /usr/bin/python3).

Mirrors the experiment file and dtrain's mlp_classifier operator
(libdtrain/dtrain/train/builtin_operators.cpp):
  space     lr 10^U(-3.7, -2) (log-uniform), hidden one of 256-128-100,
            512-256, 256-256, 128-64, optimizer adam or sgd (momentum 0.9),
            dropout 0, 0.1, 0.2 or 0.3; activation relu. (Optuna's step
            draws each dropout value with 1/4; dtrain's q rounds U(0, 0.3)
            as Ray does, 1/6 for the ends and 1/3 for the middle values.
            The draws themselves differ: compare distributions, not trials.)
  model     784-hidden...-10, Linear + ReLU (+ Dropout when > 0) per hidden
            layer, torch's default init (uniform +-1/sqrt(fan_in) for
            weights and biases, as dtrain's linear layer), cross-entropy
  training  batch 128, shuffled every epoch, the last partial batch kept;
            cosine schedule over `epochs` (15) stepped per epoch; features
            bytes / 255 with no other normalisation; validation accuracy
            on the 10,000 test images after every epoch
  searcher  RandomSampler(seed), SuccessiveHalvingPruner(min_resource=GRACE,
            reduction_factor=RF, min_early_stopping_rate=0): rungs at epochs
            GRACE * RF^k, as dtrain's ASHA rungs at grace_period * divisor^k
            (the experiment's 1 and 3: epochs 1, 3, 9), in-memory
            storage, 16 trials, 2 at a time (n_jobs=2) with one torch thread
            and one OpenBLAS thread each (dtrain gives each of its 2 replicas
            half the host's cores)

Prints one line per trial end, then `wall`, `pruned`, `epochs`, `best`
lines that tools/bench/bench_tune_peer.sh parses.

usage: /usr/bin/python3 optuna_torch_sweep.py [--trials 16] [--jobs 2]
       [--epochs 15] [--grace 1] [--rf 3] [--seed 0] [--data DIR]
"""
import argparse
import ctypes
import gzip
import os
import sys
import threading
import time

try:
    import numpy as np
    import optuna
    import torch
    import torch.nn as nn
except ImportError as e:
    print(f"skipped: {e} (apt-get install python3-optuna python3-torch)")
    sys.exit(0)

HIDDEN = {"256-128-100": [256, 128, 100], "512-256": [512, 256], "256-256": [256, 256],
          "128-64": [128, 64]}
BATCH = 128


def set_threads(n):
    """torch's intra-op threads and OpenBLAS's own pool (Debian's torch calls
    OpenBLAS for fp32 GEMM, which otherwise starts one thread per core)."""
    torch.set_num_threads(n)
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            ctypes.CDLL(name).openblas_set_num_threads(n)
        except (OSError, AttributeError):
            pass


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(directory, prefix):
    def path(kind):
        stem = os.path.join(directory, f"{prefix}-{kind}-ubyte")
        return stem + ".gz" if os.path.exists(stem + ".gz") else stem
    x = torch.from_numpy(read_idx(path("images-idx3")).reshape(-1, 784).astype(np.float32))
    y = torch.from_numpy(read_idx(path("labels-idx1")).astype(np.int64))
    return x / 255.0, y


def make_mlp(hidden, dropout):
    layers, features = [], 784
    for width in hidden:
        layers += [nn.Linear(features, width), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        features = width
    layers.append(nn.Linear(features, 10))
    return nn.Sequential(*layers)


class sweep:
    def __init__(self, args, train, test):
        self.args = args
        self.train_x, self.train_y = train
        self.test_x, self.test_y = test
        self.init_lock = threading.Lock()  # torch.manual_seed is process-wide
        self.epochs = 0
        self.count_lock = threading.Lock()
        self.start = time.perf_counter()

    def objective(self, trial):
        lr = trial.suggest_float("lr", 10 ** -3.7, 10 ** -2.0, log=True)
        hidden = trial.suggest_categorical("hidden", list(HIDDEN))
        opt_name = trial.suggest_categorical("optimizer", ["adam", "sgd"])
        dropout = trial.suggest_float("dropout", 0.0, 0.3, step=0.1)
        with self.init_lock:
            torch.manual_seed(self.args.seed * 1000 + trial.number)
            model = make_mlp(HIDDEN[hidden], dropout)
        gen = torch.Generator().manual_seed(self.args.seed * 1000 + trial.number)
        if opt_name == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=lr)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.args.epochs)
        loss_fn = nn.CrossEntropyLoss()
        n = self.train_x.shape[0]
        accuracy = 0.0
        for epoch in range(1, self.args.epochs + 1):
            model.train()
            order = torch.randperm(n, generator=gen)
            for i in range(0, n, BATCH):
                idx = order[i:i + BATCH]
                opt.zero_grad(set_to_none=True)
                loss_fn(model(self.train_x[idx]), self.train_y[idx]).backward()
                opt.step()
            schedule.step()
            model.eval()
            correct = 0
            with torch.no_grad():
                for i in range(0, self.test_x.shape[0], 1024):
                    out = model(self.test_x[i:i + 1024])
                    correct += (out.argmax(1) == self.test_y[i:i + 1024]).sum().item()
            accuracy = correct / self.test_x.shape[0]
            with self.count_lock:
                self.epochs += 1
            trial.report(accuracy, epoch)
            if trial.should_prune():
                self.log(trial, epoch, accuracy, "PRUNED")
                raise optuna.TrialPruned()
        self.log(trial, self.args.epochs, accuracy, "COMPLETE")
        return accuracy

    def log(self, trial, epoch, accuracy, what):
        print(f"[{time.perf_counter() - self.start:7.1f}s] trial {trial.number:2d} {what:8s} "
              f"epoch {epoch:2d} accuracy {accuracy:.4f} {trial.params}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--grace", type=int, default=1)
    p.add_argument("--rf", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=os.environ.get("DTRAIN_FASHION_MNIST",
                                                    "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    set_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        train, test = load(args.data, "train"), load(args.data, "t10k")
    except OSError as e:
        print(f"skipped: Fashion-MNIST not readable: {e}")
        return 0
    s = sweep(args, train, test)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=args.seed),
        pruner=optuna.pruners.SuccessiveHalvingPruner(
            min_resource=args.grace, reduction_factor=args.rf, min_early_stopping_rate=0))
    s.start = time.perf_counter()
    study.optimize(s.objective, n_trials=args.trials, n_jobs=args.jobs)
    wall = time.perf_counter() - s.start

    states = [t.state for t in study.trials]
    pruned = sum(st == optuna.trial.TrialState.PRUNED for st in states)
    # The best value any trial reported at any epoch, as dtrain's table ranks
    # trials (study.best_value only counts trials that ran to the end).
    best = max(((v, e, t) for t in study.trials for e, v in t.intermediate_values.items()),
               key=lambda x: x[0])
    print(f"optuna {optuna.__version__} + torch {torch.__version__}: {args.trials} trials, "
          f"{args.jobs} at a time, 1 torch + 1 OpenBLAS thread each")
    print(f"wall: {wall:.1f} s")
    print(f"pruned: {pruned} of {len(states)}")
    print(f"epochs: {s.epochs} of {args.trials * args.epochs}")
    print(f"best: validation_accuracy {best[0]:.4f} at epoch {best[1]} of trial "
          f"{best[2].number} {best[2].params}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
