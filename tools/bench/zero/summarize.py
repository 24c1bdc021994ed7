#!/usr/bin/python3
"""The table of issue 29's ZeRO benchmark from the RESULT lines of
torch_zero_peer.py and dtrain-bench-zero (run.sh collects them in
OUT/results.jsonl, one JSON object a line): for each N, PyTorch's DDP + Adam
and DDP + ZeroRedundancyOptimizer beside dtrain's ZeRO stages, medians over
the repeats, and the issue's goals checked.

  summarize.py OUT/results.jsonl [--setup TEXT]
"""
import argparse
import json
import statistics
import sys

MIB = 2**20
ORDER = {("torch", "ddp"): 0, ("torch", "zero"): 1}


def label(side, mode):
    if side == "torch":
        return "torch DDP+Adam" if mode == "ddp" else "torch DDP+ZeroRedundancyOpt"
    return "dtrain " + mode.replace("stage", "stage ")


def load(path):
    runs = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            runs.setdefault((r["n"], r["side"], r["mode"]), []).append(r)
    return runs


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def figures(rs):
    """Medians over the repeats of one configuration."""
    def opt(r):
        b = r.get("optimizer_bytes")
        b = max(b) if isinstance(b, list) else b
        return b if b is not None and b >= 0 else None
    return {
        "repeats": len(rs),
        "optimizer": med(opt(r) for r in rs),
        "rss": med(max(r["peak_rss_bytes"]) for r in rs),
        "pss": med(max(r["peak_pss_bytes"]) if r.get("peak_pss_bytes") else None for r in rs),
        "step_ms": med(r["step_ms"] for r in rs),
        "sps": med(r["samples_per_second"] for r in rs),
        "step_spread": (min(r["step_ms"] for r in rs), max(r["step_ms"] for r in rs)),
    }


def fmt(v, scale=1.0, digits=1):
    return "n/a" if v is None else f"{v / scale:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def print_n(n, runs):
    keys = sorted((k for k in runs if k[0] == n),
                  key=lambda k: (ORDER.get((k[1], k[2]), 9), k[2]))
    if not keys:
        return []
    f = {(k[1], k[2]): figures(runs[k]) for k in keys}
    base = f.get(("dtrain", "stage0"))
    peer = f.get(("torch", "zero"))
    print(f"\nN = {n}")
    print(f"{'configuration':<30} {'rep':>3} {'optim MiB/rank':>14} {'peak RSS MiB/rank':>17} "
          f"{'RSS/st0':>7} {'peak PSS MiB':>12} {'PSS/st0':>7} {'step ms (min-max)':>24} {'step/st0':>8} {'samples/s':>9} "
          f"{'/torch ZeRO':>11}")
    for side, mode in ((k[1], k[2]) for k in keys):
        x = f[(side, mode)]
        lo, hi = x["step_spread"]
        rss_rel = ratio(x["rss"], base["rss"]) if base and side == "dtrain" else None
        pss_rel = ratio(x["pss"], base["pss"]) if base and side == "dtrain" else None
        step_rel = ratio(x["step_ms"], base["step_ms"]) if base and side == "dtrain" else None
        vs_peer = ratio(x["sps"], peer["sps"]) if peer else None
        print(f"{label(side, mode):<30} {x['repeats']:>3} {fmt(x['optimizer'], MIB):>14} "
              f"{fmt(x['rss'], MIB):>17} {fmt(rss_rel, 1, 3):>7} "
              f"{fmt(x['pss'], MIB):>12} {fmt(pss_rel, 1, 3):>7} "
              f"{fmt(x['step_ms']):>9} ({lo:>6.0f}-{hi:>6.0f}) {fmt(step_rel, 1, 3):>8} "
              f"{fmt(x['sps']):>9} {fmt(vs_peer, 1, 2):>11}")
    return goals(n, f)


def goals(n, f):
    """The issue's goals at this N: (text, met or None when not measured)."""
    out = []
    base = f.get(("dtrain", "stage0"))
    peer = f.get(("torch", "zero"))
    for stage in (1, 2, 3):
        x = f.get(("dtrain", f"stage{stage}"))
        if x is None or base is None:
            continue
        if x["optimizer"] is not None and base["optimizer"] is not None:
            r = x["optimizer"] / (base["optimizer"] / n)
            out.append((f"N={n} stage {stage}: optimizer state/rank = {r:.3f} x total/N "
                        "(goal 1.000, padding aside)", abs(r - 1) < 0.01))
        if n == 2 and stage in (1, 2):
            r = x["step_ms"] / base["step_ms"]
            out.append((f"N=2 stage {stage}: step time {r:.3f} x unsharded (goal <= 1.05)",
                        r <= 1.05))
    x = f.get(("dtrain", "stage2"))
    if x is not None and base is not None and n in (2, 4):
        limit = 0.60 if n == 2 else 7 / 16
        r = x["rss"] / base["rss"]
        out.append((f"N={n} stage 2: peak RSS/rank {r:.3f} x unsharded (goal <= {limit:.3f})",
                    r <= limit))
        if x["pss"] is not None and base["pss"] is not None:
            r = x["pss"] / base["pss"]
            out.append((f"N={n} stage 2: peak PSS/rank {r:.3f} x unsharded (the same goal on "
                        "the proportional size)", r <= limit))
    if peer is not None:
        for mode in sorted(m for s, m in f if s == "dtrain"):
            r = f[("dtrain", mode)]["sps"] / peer["sps"]
            out.append((f"N={n} dtrain {mode}: samples/s {r:.2f} x torch DDP+ZeroRedundancyOpt "
                        "(goal >= 1.30)", r >= 1.3))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--setup", default="")
    args = p.parse_args()
    runs = load(args.results)
    if not runs:
        sys.exit(f"summarize.py: no results in {args.results}")
    print("ZeRO benchmark (issue 29): 20 x Linear(2000, 2000) + ReLU, Adam lr 1e-3, "
          "cross-entropy, synthetic data")
    if args.setup:
        print(args.setup)
    print("medians over repeats; peak RSS: max over ranks of VmHWM; peak PSS: max over ranks "
          "of the Pss sampled every 100 ms\n(shared pages split among the processes mapping "
          "them); optim: max over ranks (dtrain: rank 0's accounting);\nsamples/s = N x batch / "
          "median step")
    checks = []
    for n in sorted({k[0] for k in runs}):
        checks += print_n(n, runs)
    print("\ngoals:")
    for text, met in checks:
        print(f"  [{'met' if met else 'MISSED'}] {text}")
    if not checks:
        print("  (none measurable from these results)")


if __name__ == "__main__":
    main()
