#!/usr/bin/python3
"""Peer for tools/bench/bench_cnn_step.cpp: one training step of a small CNN.

1x28x28 -> Conv2d(1, 32, 3, padding=1) -> ReLU -> MaxPool2d(2)
        -> Conv2d(32, 64, 3, padding=1) -> ReLU -> MaxPool2d(2)
        -> Linear(3136, 128) -> ReLU -> Linear(128, 10),
batch 128, SGD(lr=0.01), cross-entropy, a fixed random batch. A step is
zero_grad, forward, loss, backward, opt.step. Three warm-up steps, then the
median of --steps.

usage: /usr/bin/python3 torch_cnn_step.py [--steps 30] [--configs 1/1 2/1 1/2 2/2]
                                          [--device cpu|cuda] [--precision P]
  each config is TORCH/BLAS: torch intra-op threads / OpenBLAS threads (on
  cuda they only set the host's threads). --precision fp32|tf32|bf16|fp16:
  fp32 with TF32 off, tf32 with it on (matmul and cuDNN), bf16 and fp16
  under torch.autocast, fp16 with a GradScaler; the parameters stay float32
  as dtrain's do. A cuda step is timed to a torch.cuda.synchronize().
Prints one line per config:
  torch threads=T OpenBLAS threads=B: step X ms
"""
import argparse
import contextlib
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


def set_precision(device, precision):
    """TF32 on or off for fp32/tf32; the autocast dtype (or None) to use."""
    if device == "cuda":
        tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


def step_ms(steps, device="cpu", precision="fp32"):
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(BATCH, 1, 28, 28, generator=g).to(device)
    y = torch.randint(0, 10, (BATCH,), generator=g).to(device)
    amp_dtype = set_precision(device, precision)
    scaler = None
    if precision == "fp16":
        scaler = (torch.amp.GradScaler(device) if hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    def autocast():
        if amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=device, dtype=amp_dtype)

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    ts = []
    for i in range(steps + 3):
        sync()
        a = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        sync()
        b = time.perf_counter()
        if i >= 3:
            ts.append(b - a)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--configs", nargs="+", default=["1/1", "2/1", "1/2", "2/2"])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default="fp32")
    args = ap.parse_args()
    extra = ""
    if args.device == "cuda":
        extra = f", {torch.cuda.get_device_name(0)}, {args.precision}"
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}{extra}",
          flush=True)
    for cfg in args.configs:
        t, b = (int(v) for v in cfg.split("/"))
        set_threads(t, b)
        ms = step_ms(args.steps, args.device, args.precision)
        print(f"torch threads={t} OpenBLAS threads={b}: step {ms:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
