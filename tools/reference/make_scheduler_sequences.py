#!/usr/bin/python3
"""Writes tests/tune/scheduler_sequences/NAME.events and NAME.decisions: scheduler event
logs and Optuna 3.1's decision at every report (optuna_replay.py).

Which reports a log holds depends on the decisions (a pruned trial reports
no more), so each log is generated while Optuna replays it: the tuner's
interleaving is simulated and every report is answered at once. The output
is deterministic (seeded), so re-running rewrites the same files.

The tuner's interleaving: `concurrency` slots filled in id order; each tick
every running trial reports its next epoch, in id order; a trial that is
pruned, completes or fails frees its slot, refilled with the next trials at
the end of the tick.

Usage: make_scheduler_sequences.py [OUT_DIR]   (default tests/tune/scheduler_sequences)
Then:  optuna_replay.py --check OUT_DIR/*.events
"""
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optuna_replay import header_line, replayer  # noqa: E402

NAN = float("nan")


class plan:
    """One trial: its curve (epoch -> value), the epochs it runs, the
    epochs it reports at (every `step`-th), and an epoch it fails at."""

    def __init__(self, curve, epochs, step=1, fail_at=None):
        self.curve = curve
        self.epochs = epochs
        self.step = step
        self.fail_at = fail_at


def fmt(v):
    return "nan" if math.isnan(v) else repr(v)


def run(kind, params, plans, concurrency):
    """Simulates the tuner over `plans` with Optuna deciding; returns the
    event lines and decision lines."""
    r = replayer(kind, params)
    events = [header_line(kind, params)]
    decisions = []
    pending = [(f"t{i:02d}", p) for i, p in enumerate(plans)]
    running = []  # [name, plan, next epoch], in id order

    def fill():
        while len(running) < concurrency and pending:
            name, p = pending.pop(0)
            running.append([name, p, p.step])
            events.append(f"start {name}")
            r.start(name)

    fill()
    while running:
        for slot in list(running):
            name, p, epoch = slot
            if p.fail_at is not None and epoch >= p.fail_at:
                events.append(f"fail {name}")
                r.fail(name)
                running.remove(slot)
                continue
            value = p.curve(epoch)
            events.append(f"report {name} {epoch} {fmt(value)}")
            d = r.report(name, epoch, value)
            decisions.append(f"decision {name} {epoch} {d}")
            if d == "prune":
                running.remove(slot)
            elif epoch + p.step > p.epochs:
                events.append(f"complete {name}")
                r.complete(name)
                running.remove(slot)
            else:
                slot[2] = epoch + p.step
        fill()
    return events, decisions


def rising(rng, sign, noise=0.01, digits=4):
    """a - b/t (maximize) or a + b/t (minimize, sign -1) plus noise."""
    a = rng.uniform(0.5, 0.9)
    b = rng.uniform(0.0, 0.5)
    eps = [rng.gauss(0, noise) for _ in range(200)]
    return lambda t: round(sign * (a - b / t) + (1 - sign) * 0.5 + eps[t], digits)


def sign_of(direction):
    return 1 if direction == "maximize" else -1


def with_nans(curve, nan_epochs):
    return lambda t: NAN if t in nan_epochs else curve(t)


def sha(min_resource, rf, direction, max_t=None):
    p = {"min_resource": min_resource, "reduction_factor": rf, "direction": direction}
    if max_t:
        p["max_t"] = max_t
    return "sha", p


def median(startup, warmup, direction):
    return "median", {"n_startup_trials": startup, "n_warmup_steps": warmup,
                      "direction": direction}


def curves(rng, n, direction, epochs, **kw):
    return [plan(rising(rng, sign_of(direction), **kw), epochs) for _ in range(n)]


def hand_built():
    """Named sequences, each aimed at one edge case."""
    out = {}
    rng = random.Random(7)
    # The notes' §7.4 setting: 12 curves, rf 2, grace 1, 16 epochs, 4 slots.
    out["sha_rf2_g1_max_c4_trace"] = (sha(1, 2, "maximize", 16),
                                       curves(rng, 12, "maximize", 16), 4)
    out["sha_rf2_g1_max_c1"] = (sha(1, 2, "maximize", 16), curves(rng, 12, "maximize", 16), 1)
    # rungs 2, 6, 18: the last epoch is a rung.
    out["sha_rf3_g2_min_c2_max_t_rung"] = (sha(2, 3, "minimize", 18),
                                           curves(rng, 15, "minimize", 18), 2)
    out["sha_rf4_g1_max_c4_max_t_rung"] = (sha(1, 4, "maximize", 16),
                                           curves(rng, 20, "maximize", 16), 4)
    out["sha_rf4_g3_min_c1"] = (sha(3, 4, "minimize", 14), curves(rng, 10, "minimize", 14), 1)
    # No max_t: dtrain's unbounded rung list.
    out["sha_rf3_g1_max_c2_no_max_t"] = (sha(1, 3, "maximize"), curves(rng, 10, "maximize", 10), 2)
    # Ties: one-decimal values, and groups of identical curves.
    ties = curves(rng, 10, "maximize", 8, noise=0.05, digits=1)
    same = rising(rng, 1, noise=0.0)
    ties += [plan(same, 8) for _ in range(4)]
    out["sha_rf2_g1_max_c2_ties"] = (sha(1, 2, "maximize", 8), ties, 2)
    const = [plan(lambda t, c=c: c, 6) for c in (5.0, 5.0, 5.0, 3.0, 5.0, 6.0, 5.0, 5.0)]
    out["sha_rf2_g1_max_c1_constant_ties"] = (sha(1, 2, "maximize", 6), const, 1)
    const_min = [plan(lambda t, c=c: c, 9) for c in (2.0, 2.0, 1.0, 2.0, 2.0, 1.0, 1.0, 3.0, 2.0)]
    out["sha_rf3_g1_min_c1_constant_ties"] = (sha(1, 3, "minimize", 9), const_min, 1)
    # NaN at rungs, between rungs, on every epoch.
    base = curves(rng, 12, "maximize", 12)
    base[1].curve = with_nans(base[1].curve, {1})        # at the first rung
    base[2].curve = with_nans(base[2].curve, {2, 5})     # between rungs (rungs 1, 3, 9)
    base[4].curve = with_nans(base[4].curve, set(range(1, 13)))
    base[6].curve = with_nans(base[6].curve, {4, 9})     # between, then at rung 9
    base[8].curve = with_nans(base[8].curve, {2})
    out["sha_rf3_g1_max_c2_nan"] = (sha(1, 3, "maximize", 12), base, 2)
    base = curves(rng, 8, "minimize", 8)
    base[0].curve = with_nans(base[0].curve, {1})        # before the first rung (grace 2)
    base[3].curve = with_nans(base[3].curve, {2})
    base[5].curve = with_nans(base[5].curve, {3})
    out["sha_rf2_g2_min_c4_nan"] = (sha(2, 2, "minimize", 8), base, 4)
    # Fewer trials than the reduction factor at every rung.
    out["sha_rf4_g1_max_c1_few"] = (sha(1, 4, "maximize", 16), curves(rng, 3, "maximize", 16), 1)
    out["sha_rf4_g1_min_c4_few"] = (sha(1, 4, "minimize", 16), curves(rng, 3, "minimize", 16), 4)
    # Reports every 3rd epoch jump over rungs 1 and 2 (rungs 1, 2, 4, 8, 16).
    jump = curves(rng, 12, "maximize", 24)
    for p in jump:
        p.step = 3
    out["sha_rf2_g1_max_c2_jump"] = (sha(1, 2, "maximize", 24), jump, 2)
    jump = curves(rng, 10, "minimize", 27)
    for p in jump[::2]:
        p.step = 3
    out["sha_rf3_g1_min_c4_jump_mixed"] = (sha(1, 3, "minimize", 27), jump, 4)
    # Failed trials: their rung values still compete.
    failing = curves(rng, 14, "maximize", 16)
    for i, at in ((0, 5), (3, 3), (6, 9), (9, 1), (10, 2)):
        failing[i].fail_at = at
    out["sha_rf2_g1_max_c4_failed"] = (sha(1, 2, "maximize", 16), failing, 4)

    # Median.
    out["median_max_c1_startup3"] = (median(3, 0, "maximize"), curves(rng, 12, "maximize", 10), 1)
    out["median_min_c4_warmup3"] = (median(2, 3, "minimize"), curves(rng, 14, "minimize", 10), 4)
    out["median_max_c2_startup0"] = (median(0, 0, "maximize"), curves(rng, 10, "maximize", 8), 2)
    out["median_max_c4_startup5_warmup2"] = (median(5, 2, "maximize"),
                                             curves(rng, 16, "maximize", 8), 4)
    # The notes' §2.3 curves: [1,2,3], [3,3,3] complete; [5,0,0] goes on; [0,0,4] pruned at 1.
    fixed = [plan(lambda t, c=c: c[t - 1], 3) for c in ([1, 2, 3], [3, 3, 3], [5, 0, 0], [0, 0, 4])]
    for p in fixed:
        p.curve = (lambda f: lambda t: float(f(t)))(p.curve)
    out["median_max_c1_best_so_far"] = (median(2, 0, "maximize"), fixed, 1)
    base = curves(rng, 12, "maximize", 8)
    base[0].curve = with_nans(base[0].curve, {2, 3})      # a completed trial with NaNs
    base[1].curve = with_nans(base[1].curve, {3})
    base[5].curve = with_nans(base[5].curve, set(range(1, 9)))
    base[7].curve = with_nans(base[7].curve, {1, 2})
    base[9].curve = with_nans(base[9].curve, {4})
    out["median_max_c2_nan"] = (median(2, 0, "maximize"), base, 2)
    base = curves(rng, 14, "minimize", 8)
    for i, at in ((0, 4), (2, 2), (5, 6), (8, 1)):
        base[i].fail_at = at
    out["median_min_c4_failed"] = (median(2, 0, "minimize"), base, 4)
    # Trials of different lengths (a stopper ends some early) and reports
    # every 2nd epoch: completed trials lack some epochs.
    mixed = curves(rng, 12, "maximize", 10)
    for i, p in enumerate(mixed):
        p.epochs = (4, 10, 7, 10)[i % 4]
        p.step = 2 if i % 3 == 0 else 1
    out["median_max_c2_uneven"] = (median(1, 0, "maximize"), mixed, 2)
    return out


def randomized(count, seed):
    """Random configurations over the matrix: rf, grace, direction,
    concurrency, steps, NaNs, failures."""
    out = {}
    rng = random.Random(seed)
    for i in range(count):
        direction = rng.choice(["maximize", "minimize"])
        concurrency = rng.choice([1, 2, 4])
        epochs = rng.choice([6, 8, 9, 12, 16])
        n = rng.randint(3, 14)
        plans = curves(rng, n, direction, epochs, noise=rng.choice([0.0, 0.01, 0.05]),
                       digits=rng.choice([2, 4]))
        for p in plans:
            if rng.random() < 0.1:
                p.curve = with_nans(p.curve, {rng.randint(1, epochs)})
            if rng.random() < 0.08:
                p.fail_at = rng.randint(1, epochs)
            if rng.random() < 0.15:
                p.step = rng.choice([2, 3])
        if i % 3 == 2:
            kind = median(rng.choice([0, 1, 2, 3, 5]), rng.choice([0, 1, 3]), direction)
            name = f"random{i:02d}_median"
        else:
            rf = rng.choice([2, 3, 4])
            grace = rng.choice([1, 2, 3])
            kind = sha(grace, rf, direction, epochs if rng.random() < 0.8 else None)
            name = f"random{i:02d}_sha_rf{rf}_g{grace}"
        out[f"{name}_c{concurrency}"] = (kind, plans, concurrency)
    return out


def main(argv):
    out_dir = argv[0] if argv else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..",
        "tests", "tune", "scheduler_sequences")
    os.makedirs(out_dir, exist_ok=True)
    sequences = hand_built()
    sequences.update(randomized(18, 2026))
    total = 0
    for name, ((kind, params), plans, concurrency) in sorted(sequences.items()):
        events, decisions = run(kind, params, plans, concurrency)
        with open(os.path.join(out_dir, name + ".events"), "w") as f:
            f.write("\n".join(events) + "\n")
        with open(os.path.join(out_dir, name + ".decisions"), "w") as f:
            f.write("\n".join(decisions) + "\n")
        pruned = sum(d.endswith("prune") for d in decisions)
        total += len(decisions)
        print(f"{name}: {len(plans)} trials, {len(decisions)} reports, {pruned} pruned")
    print(f"{len(sequences)} sequences, {total} decisions")


if __name__ == "__main__":
    main(sys.argv[1:])
