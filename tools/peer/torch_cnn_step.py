#!/usr/bin/python3
"""Peer for tools/bench_cnn_step.cpp: one training step of a small CNN on the CPU.

1x28x28 -> Conv2d(1, 32, 3, padding=1) -> ReLU -> MaxPool2d(2)
        -> Conv2d(32, 64, 3, padding=1) -> ReLU -> MaxPool2d(2)
        -> Linear(3136, 128) -> ReLU -> Linear(128, 10),
batch 128, SGD(lr=0.01), cross-entropy, a fixed random batch. A step is
zero_grad, forward, loss, backward, opt.step. Three warm-up steps, then the
median of --steps.

usage: /usr/bin/python3 torch_cnn_step.py [--steps 30] [--configs 1/1 2/1 1/2 2/2]
  each config is TORCH/BLAS: torch intra-op threads / OpenBLAS threads.
Prints one line per config:
  torch threads=T OpenBLAS threads=B: step X ms
"""
import argparse
import ctypes
import statistics
import time

import torch
import torch.nn as nn

BATCH = 128


def set_threads(torch_threads, blas_threads):
    """torch intra-op threads and OpenBLAS's own pthread pool (see torch_ddp_mlp.py)."""
    torch.set_num_threads(torch_threads)
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            ctypes.CDLL(name).openblas_set_num_threads(blas_threads)
        except (OSError, AttributeError):
            pass


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def step_ms(steps):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(BATCH, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (BATCH,), generator=g)
    ts = []
    for i in range(steps + 3):
        a = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        b = time.perf_counter()
        if i >= 3:
            ts.append(b - a)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--configs", nargs="+", default=["1/1", "2/1", "1/2", "2/2"])
    args = ap.parse_args()
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}",
          flush=True)
    for cfg in args.configs:
        t, b = (int(v) for v in cfg.split("/"))
        set_threads(t, b)
        ms = step_ms(args.steps)
        print(f"torch threads={t} OpenBLAS threads={b}: step {ms:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
