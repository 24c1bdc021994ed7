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

Hyperband sequences (hyperband_*) come from their own random streams, so
adding them left the SHA and median files as they were; a trial's number
in Optuna is the rank of its `start` line. hyperband_bracket_ids.txt holds
Optuna's bracket budgets and the bracket of trials 0..199 for a few
settings (tests/tune/hyperband_scheduler_test.cpp).

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


def hyperband(study_name, min_resource, max_resource, rf, direction):
    return "hyperband", {"study_name": study_name, "min_resource": min_resource,
                         "max_resource": max_resource, "reduction_factor": rf,
                         "direction": direction}


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


def hyperband_built():
    """Hyperband sequences: the ASHA edge cases, within brackets, and
    enough trials that every bracket gets some. Their own random stream,
    so that the SHA and median sequences above stay as they were."""
    out = {}
    rng = random.Random(30)
    # 3 brackets (budgets 9, 5, 3 of 17; first rungs 1, 3, 9).
    for c in (1, 2, 4):
        out[f"hyperband_rf3_m1_max9_max_c{c}"] = (hyperband("sweep", 1, 9, 3, "maximize"),
                                                   curves(rng, 40, "maximize", 9), c)
    out["hyperband_rf3_m1_max9_min_c2"] = (hyperband("fmnist-hb", 1, 9, 3, "minimize"),
                                           curves(rng, 40, "minimize", 9), 2)
    # rf 2 (4 brackets over 8 epochs), rf 4 with min_resource 2 and 3.
    out["hyperband_rf2_m1_max8_max_c4"] = (hyperband("rf2", 1, 8, 2, "maximize"),
                                           curves(rng, 48, "maximize", 8), 4)
    out["hyperband_rf4_m2_max32_min_c2"] = (hyperband("rf4", 2, 32, 4, "minimize"),
                                            curves(rng, 36, "minimize", 32), 2)
    out["hyperband_rf3_m3_max27_max_c1"] = (hyperband("grace3", 3, 27, 3, "maximize"),
                                            curves(rng, 30, "maximize", 27), 1)
    # Python's log quirks: log(243)/log(3) < 5 (5 brackets, not 6) and
    # log(1000)/log(10) < 3 (3 brackets, not 4). Trials run fewer epochs
    # than max_resource, as Optuna allows.
    out["hyperband_rf3_m1_max243_max_c4_log_quirk"] = (
        hyperband("quirk", 1, 243, 3, "maximize"), curves(rng, 60, "maximize", 30), 4)
    out["hyperband_rf10_m1_max1000_min_c2_log_quirk"] = (
        hyperband("quirk10", 1, 1000, 10, "minimize"), curves(rng, 30, "minimize", 20), 2)
    # One bracket (max_resource < min_resource * rf): plain SHA.
    out["hyperband_rf3_m2_max5_max_c2_one_bracket"] = (hyperband("one", 2, 5, 3, "maximize"),
                                                        curves(rng, 12, "maximize", 5), 2)
    # Ties: one-decimal values and constant curves.
    ties = curves(rng, 30, "maximize", 9, noise=0.05, digits=1)
    ties += [plan(lambda t, c=c: c, 9) for c in (5.0, 5.0, 3.0, 5.0, 6.0, 5.0) * 3]
    out["hyperband_rf3_m1_max9_max_c2_ties"] = (hyperband("ties", 1, 9, 3, "maximize"), ties, 2)
    # NaN at rungs, between rungs, everywhere.
    base = curves(rng, 36, "maximize", 9)
    for i, nans in ((1, {1}), (2, {2}), (4, set(range(1, 10))), (6, {4, 9}), (9, {3}),
                    (11, {9}), (14, {1, 2}), (20, {5}), (27, {3, 9})):
        base[i].curve = with_nans(base[i].curve, nans)
    out["hyperband_rf3_m1_max9_max_c2_nan"] = (hyperband("nan", 1, 9, 3, "maximize"), base, 2)
    # Reports every 3rd / 4th epoch jump over rungs.
    jump = curves(rng, 36, "minimize", 16)
    for i, p in enumerate(jump):
        p.step = (1, 3, 4)[i % 3]
    out["hyperband_rf2_m1_max16_min_c4_jump"] = (hyperband("jump", 1, 16, 2, "minimize"), jump, 4)
    # Failed trials' rung values compete; pruned ones' too (always).
    failing = curves(rng, 40, "maximize", 9)
    for i, at in ((0, 5), (3, 3), (6, 9), (9, 1), (10, 2), (17, 4), (22, 7), (31, 2)):
        failing[i].fail_at = at
    out["hyperband_rf3_m1_max9_max_c4_failed"] = (hyperband("fail", 1, 9, 3, "maximize"),
                                                   failing, 4)
    # Few trials: every bracket sees fewer than rf trials.
    out["hyperband_rf4_m1_max16_max_c1_few"] = (hyperband("few", 1, 16, 4, "maximize"),
                                                curves(rng, 5, "maximize", 16), 1)
    # max_resource auto: nothing judged until a trial completes (trials of
    # different lengths; a stopper ends some early).
    auto = curves(rng, 30, "maximize", 9)
    for i, p in enumerate(auto):
        p.epochs = (9, 4, 9, 6)[i % 4]
    out["hyperband_rf3_m1_auto_max_c4"] = (hyperband("auto", 1, "auto", 3, "maximize"), auto, 4)
    auto = curves(rng, 24, "minimize", 12)
    for i, p in enumerate(auto):
        p.epochs = (3, 12, 8)[i % 3]
        if i % 5 == 1:
            p.fail_at = 2
    out["hyperband_rf2_m1_auto_min_c2_first_short"] = (hyperband("auto2", 1, "auto", 2, "minimize"),
                                                        auto, 2)
    # auto with the first completed trial shorter than min_resource: no bracket, nothing pruned.
    auto = curves(rng, 10, "maximize", 6)
    auto[0].epochs = 1
    out["hyperband_rf3_m3_auto_max_c1_no_bracket"] = (hyperband("none", 3, "auto", 3, "maximize"),
                                                       auto, 1)
    return out


def random_plans(rng, n, direction, epochs):
    """n random curves, some with a NaN, a failure, or reports every 2nd
    or 3rd epoch."""
    plans = curves(rng, n, direction, epochs, noise=rng.choice([0.0, 0.01, 0.05]),
                   digits=rng.choice([2, 4]))
    for p in plans:
        if rng.random() < 0.1:
            p.curve = with_nans(p.curve, {rng.randint(1, epochs)})
        if rng.random() < 0.08:
            p.fail_at = rng.randint(1, epochs)
        if rng.random() < 0.15:
            p.step = rng.choice([2, 3])
    return plans


def randomized_hyperband(count, seed):
    """Random Hyperband configurations: rf, min_resource, max_resource,
    direction, concurrency, steps, NaNs, failures."""
    out = {}
    rng = random.Random(seed)
    for i in range(count):
        direction = rng.choice(["maximize", "minimize"])
        concurrency = rng.choice([1, 2, 4])
        rf = rng.choice([2, 3, 4])
        min_resource = rng.choice([1, 2, 3])
        epochs = rng.choice([8, 9, 12, 16, 27])
        max_resource = epochs if rng.random() < 0.8 else "auto"
        plans = random_plans(rng, rng.randint(20, 50), direction, epochs)
        name = f"hyperband_random{i:02d}_rf{rf}_m{min_resource}_c{concurrency}"
        out[name] = (hyperband(f"study{i}", min_resource, max_resource, rf, direction), plans,
                     concurrency)
    return out


def bracket_ids():
    """Optuna's bracket of trials 0..199 for a few (study, min, max, rf):
    tests/tune/scheduler_sequences/hyperband_bracket_ids.txt, one line
    'study min max rf number bracket', after a line per setting with its
    budgets."""
    import optuna
    lines = []
    for study, lo, hi, rf in (("sweep", 1, 9, 3), ("fmnist", 1, 27, 3), ("x", 2, 64, 2),
                              ("quirk", 1, 243, 3), ("quirk10", 1, 1000, 10), ("one", 1, 2, 3)):
        pruner = optuna.pruners.HyperbandPruner(min_resource=lo, max_resource=hi,
                                                reduction_factor=rf)
        pruner._try_initialization(None)  # an int max_resource never reads the study
        budgets = " ".join(map(str, pruner._trial_allocation_budgets))
        lines.append(f"# budgets {study} {lo} {hi} {rf} {budgets}")
        named = type("named", (), {"study_name": study})
        for number in range(200):
            trial = type("numbered", (), {"number": number})
            lines.append(f"{study} {lo} {hi} {rf} {number} "
                         f"{pruner._get_bracket_id(named, trial)}")
    return lines


def randomized(count, seed):
    """Random configurations over the matrix: rf, grace, direction,
    concurrency, steps, NaNs, failures."""
    out = {}
    rng = random.Random(seed)
    for i in range(count):
        direction = rng.choice(["maximize", "minimize"])
        concurrency = rng.choice([1, 2, 4])
        epochs = rng.choice([6, 8, 9, 12, 16])
        plans = random_plans(rng, rng.randint(3, 14), direction, epochs)
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
    sequences.update(hyperband_built())
    sequences.update(randomized_hyperband(12, 3030))
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
    with open(os.path.join(out_dir, "hyperband_bracket_ids.txt"), "w") as f:
        f.write("\n".join(bracket_ids()) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
