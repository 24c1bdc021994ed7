#!/usr/bin/python3
"""The PyTorch peer of issue 29's ZeRO benchmark (README.md beside this file).

PyTorch's own ZeroRedundancyOptimizer recipe model, 20 x nn.Linear(2000, 2000)
trained with Adam (lr 1e-3), on N processes (torch.multiprocessing spawn,
gloo on loopback), in two modes:

  ddp   DDP + torch.optim.Adam: every rank holds all of Adam's state
  zero  DDP + ZeroRedundancyOptimizer(Adam): ZeRO stage 1, each rank keeps
        the state of its share of the parameters and broadcasts them after
        its step

dtrain's MLP has an activation between its layers, so this model has a ReLU
between each pair of Linear layers too (19 ReLUs; no parameters, and the same
layers as dtrain's `mlp_classifier` with hidden = 19 x 2000, 2000 classes).
Loss: cross-entropy over 2000 classes on synthetic data (a few fixed batches
of uniform inputs and random labels), `--batch` samples per rank per step.

One thread per rank (torch.set_num_threads(1), OMP_NUM_THREADS=1 and
OPENBLAS_NUM_THREADS=1 set before torch is imported in the ranks).

Per rank: optimizer state bytes (the bytes of the optimizer's state tensors
after the first step; for ZeRO the local optimizer's), parameter and gradient
bytes, peak RSS (getrusage ru_maxrss and /proc/self/status VmHWM), the peak
Pss (/proc/self/smaps_rollup, sampled every 100 ms), and the
median step time (zero_grad + forward + backward + step) over the steps after
`--warmup`, and of that the optimizer step's (for ZeRO: the local Adam step
and the broadcasts of the parameters from their owners). Prints one line per (mode, N):

  RESULT {"side": "torch", "mode": "zero", "n": 2, ...}

and a human table at the end.

  /usr/bin/python3 torch_zero_peer.py [--nprocs 2 4] [--modes ddp zero]
                                      [--batch 16] [--steps 12] [--warmup 3]
"""
import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

# Before torch is imported (here and, through the environment, in the ranks
# torch.multiprocessing spawns).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import resource  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

WIDTH = 2000
LAYERS = 20


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_model():
    layers = []
    for i in range(LAYERS):
        layers.append(torch.nn.Linear(WIDTH, WIDTH))
        if i + 1 < LAYERS:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def state_bytes(optimizer):
    total = 0
    for per_param in optimizer.state.values():
        for value in per_param.values():
            if torch.is_tensor(value):
                total += value.numel() * value.element_size()
    return total


def vm_hwm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def pss_bytes():
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


class PssSampler:
    """The peak of this process's Pss (shared pages split among the processes
    mapping them: the ranks share libtorch's pages), sampled every 100 ms on a
    thread until stop(); the kernel keeps a peak of RSS only."""

    def __init__(self):
        self.peak = pss_bytes()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.wait(0.1):
            self.peak = max(self.peak, pss_bytes())

    def stop(self):
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, pss_bytes())
        return self.peak


def rank_main(rank, world, mode, args, port, out_dir):
    torch.set_num_threads(1)
    if args.flush_denormal:
        torch.set_flush_denormal(True)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=__import__("datetime").timedelta(seconds=300))
    torch.manual_seed(args.seed)
    sampler = PssSampler()
    model = DDP(make_model())
    params = list(model.parameters())
    if mode == "zero":
        optimizer = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.Adam, lr=1e-3)
        local = optimizer.optim
    else:
        optimizer = torch.optim.Adam(params, lr=1e-3)
        local = optimizer
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed + rank)
    batches = [(torch.rand(args.batch, WIDTH, generator=g),
                torch.randint(0, WIDTH, (args.batch,), generator=g)) for _ in range(4)]
    times, step_times, opt_bytes = [], [], 0
    for step in range(args.warmup + args.steps):
        x, y = batches[step % len(batches)]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        before_step = time.perf_counter()
        optimizer.step()  # ZeRO: the local Adam step, then the owners' broadcasts
        elapsed = time.perf_counter() - start
        if step == 0:
            opt_bytes = state_bytes(local)
        if step >= args.warmup:
            times.append(elapsed)
            step_times.append(time.perf_counter() - before_step)
    dist.barrier()
    peak_pss = sampler.stop()
    figures = {
        "peak_pss_bytes": peak_pss,
        "rank": rank,
        "optimizer_bytes": opt_bytes,
        "parameters_bytes": sum(p.numel() * p.element_size() for p in params),
        "gradients_bytes": sum(p.grad.numel() * p.grad.element_size()
                               for p in params if p.grad is not None),
        "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "vm_hwm_bytes": vm_hwm_bytes(),
        "step_ms": statistics.median(times) * 1e3,
        "optimizer_step_ms": statistics.median(step_times) * 1e3,
        "loss": float(loss),
    }
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(figures, f)
    dist.destroy_process_group()


def run(mode, world, args):
    with tempfile.TemporaryDirectory(prefix="torch-zero-peer-") as out_dir:
        port = free_port()
        mp.spawn(rank_main, args=(world, mode, args, port, out_dir), nprocs=world, join=True)
        ranks = []
        for r in range(world):
            with open(os.path.join(out_dir, f"rank{r}.json")) as f:
                ranks.append(json.load(f))
    step_ms = statistics.median(r["step_ms"] for r in ranks)
    return {
        "side": "torch", "mode": mode, "n": world, "batch_per_rank": args.batch,
        "steps": args.steps, "threads_per_rank": 1, "flush_denormal": args.flush_denormal,
        "optimizer_bytes": [r["optimizer_bytes"] for r in ranks],
        "parameters_bytes": [r["parameters_bytes"] for r in ranks],
        "gradients_bytes": [r["gradients_bytes"] for r in ranks],
        "peak_rss_bytes": [r["vm_hwm_bytes"] for r in ranks],
        "ru_maxrss_bytes": [r["ru_maxrss_bytes"] for r in ranks],
        "peak_pss_bytes": [r["peak_pss_bytes"] for r in ranks],
        "step_ms_per_rank": [r["step_ms"] for r in ranks],
        "optimizer_step_ms_per_rank": [r["optimizer_step_ms"] for r in ranks],
        "step_ms": step_ms,
        "samples_per_second": world * args.batch / (step_ms / 1e3),
    }


def mib(b):
    return b / 2**20


def print_table(results):
    print(f"\nPyTorch {torch.__version__}, 20 x Linear(2000, 2000) + ReLU, Adam, gloo, "
          "1 thread per rank (torch.set_num_threads(1), OMP/OpenBLAS 1)")
    print(f"{'mode':<6} {'N':>2} {'opt MiB/rank':>13} {'peak RSS MiB/rank (max)':>24} "
          f"{'step ms':>8} {'samples/s':>10}")
    for r in results:
        print(f"{r['mode']:<6} {r['n']:>2} {mib(max(r['optimizer_bytes'])):>13.1f} "
              f"{mib(max(r['peak_rss_bytes'])):>24.1f} {r['step_ms']:>8.1f} "
              f"{r['samples_per_second']:>10.1f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nprocs", type=int, nargs="+", default=[2, 4])
    p.add_argument("--modes", nargs="+", default=["ddp", "zero"], choices=["ddp", "zero"])
    p.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    p.add_argument("--steps", type=int, default=12, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (>= 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flush-denormal", action="store_true",
                   help="torch.set_flush_denormal(True) in every rank (default: PyTorch's, off)")
    args = p.parse_args()
    if args.warmup < 1 or args.steps < 1 or args.batch < 1:
        sys.exit("torch_zero_peer.py: --warmup, --steps and --batch must be >= 1")
    results = []
    for world in args.nprocs:
        for mode in args.modes:
            r = run(mode, world, args)
            print("RESULT " + json.dumps(r), flush=True)
            results.append(r)
    print_table(results)


if __name__ == "__main__":
    main()
