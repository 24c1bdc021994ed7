#!/usr/bin/python3
"""Replays a scheduler event log through Optuna 3.1's pruners (the oracle).

tests/tune/scheduler_test.cpp replays the same logs through dtrain's ASHA
and median schedulers and requires the same decision at every report.
Run with Debian's /usr/bin/python3 (python3-optuna 3.1: tools/install-deps.sh
--peers).

Event log (one event a line, in the tuner's global order):
    # pruner sha min_resource=2 reduction_factor=3 direction=maximize [max_t=8]
    # pruner median n_startup_trials=3 n_warmup_steps=2 direction=minimize
    # pruner hyperband study_name=NAME min_resource=1 max_resource=9|auto reduction_factor=3 direction=maximize
    start T
    report T EPOCH VALUE        (VALUE may be nan)
    complete T
    fail T
Other lines starting with '#' are comments. max_t is dtrain's (Optuna has no
maximum resource); the replay only checks that no report passes it.

hyperband is HyperbandPruner(min_resource, max_resource, reduction_factor,
bootstrap_count=0) in a study named study_name; trials are asked in the
order of their `start` lines, so the n-th started trial (from 0) is Optuna's
trial.number n: dtrain's replay numbers its trials the same way (on_add).

Decisions: one line per report, `decision T EPOCH prune|keep`. A pruned trial
is told PRUNED at once, as dtrain's tuner ends it; the log must not report it
again. Storage is in-memory (storage=None) on purpose: Optuna 3.1 with RDB
storage counts the reporting trial twice at a rung (see the tuning notes,
§2.3).

Usage: optuna_replay.py LOG.events [-o LOG.decisions]
       optuna_replay.py --check LOG.events...   (compare with LOG.decisions)
"""
import sys
import warnings

import optuna
from optuna.trial import TrialState

optuna.logging.set_verbosity(optuna.logging.ERROR)
# numpy warns about all-NaN slices; Optuna handles them (that is the case tested).
warnings.filterwarnings("ignore", category=RuntimeWarning)


def parse_header(line):
    """'# pruner sha k=v ...' -> ('sha', {'k': 'v', ...})."""
    words = line.split()
    if words[:2] != ["#", "pruner"] or len(words) < 3:
        raise ValueError(f"not a pruner header: {line!r}")
    return words[2], dict(w.split("=", 1) for w in words[3:])


def header_line(kind, params):
    return "# pruner " + kind + "".join(f" {k}={v}" for k, v in params.items())


class replayer:
    """Feeds events one at a time to an Optuna study; report() answers
    'prune' or 'keep', so a generator can decide what to emit next."""

    def __init__(self, kind, params):
        self.kind = kind
        self.params = params
        self.max_t = int(params.get("max_t", 0))
        if kind == "sha":
            pruner = optuna.pruners.SuccessiveHalvingPruner(
                min_resource=int(params["min_resource"]),
                reduction_factor=int(params["reduction_factor"]),
                min_early_stopping_rate=0, bootstrap_count=0)
        elif kind == "hyperband":
            max_resource = params["max_resource"]
            pruner = optuna.pruners.HyperbandPruner(
                min_resource=int(params["min_resource"]),
                max_resource=max_resource if max_resource == "auto" else int(max_resource),
                reduction_factor=int(params["reduction_factor"]), bootstrap_count=0)
        elif kind == "median":
            pruner = optuna.pruners.MedianPruner(
                n_startup_trials=int(params["n_startup_trials"]),
                n_warmup_steps=int(params["n_warmup_steps"]),
                interval_steps=1, n_min_trials=1)
        else:
            raise ValueError(f"unknown pruner {kind!r}")
        self.study = optuna.create_study(storage=None, direction=params["direction"],
                                         pruner=pruner, study_name=params.get("study_name"))
        self.running = {}

    def start(self, name):
        if name in self.running:
            raise ValueError(f"trial {name} started twice")
        self.running[name] = self.study.ask()

    def report(self, name, epoch, value):
        if self.max_t and epoch > self.max_t:
            raise ValueError(f"trial {name} reports epoch {epoch} past max_t {self.max_t}")
        trial = self.running[name]
        trial.report(value, epoch)
        if trial.should_prune():
            self.study.tell(trial, state=TrialState.PRUNED)
            del self.running[name]
            return "prune"
        return "keep"

    def complete(self, name):
        # The final value does not matter to the pruners; a NaN there would
        # make Optuna mark the trial FAIL, so tell a constant.
        self.study.tell(self.running.pop(name), 0.0)

    def fail(self, name):
        self.study.tell(self.running.pop(name), state=TrialState.FAIL)


def replay(lines):
    """Event lines -> decision lines."""
    r = None
    out = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("# pruner"):
            r = replayer(*parse_header(line))
            continue
        if line.startswith("#"):
            continue
        words = line.split()
        if r is None:
            raise ValueError(f"line {n}: event before the '# pruner' header")
        if words[0] == "start":
            r.start(words[1])
        elif words[0] == "report":
            epoch = int(words[2])
            out.append(f"decision {words[1]} {epoch} {r.report(words[1], epoch, float(words[3]))}")
        elif words[0] == "complete":
            r.complete(words[1])
        elif words[0] == "fail":
            r.fail(words[1])
        else:
            raise ValueError(f"line {n}: unknown event {words[0]!r}")
    return out


def main(argv):
    if argv and argv[0] == "--check":
        bad = 0
        for path in argv[1:]:
            with open(path) as f:
                got = replay(f.readlines())
            with open(path[: -len(".events")] + ".decisions") as f:
                want = [l.strip() for l in f if l.strip()]
            if got != want:
                bad += 1
                print(f"{path}: differs from its .decisions", file=sys.stderr)
        print(f"{len(argv) - 1 - bad} of {len(argv) - 1} logs agree")
        return 1 if bad else 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        out = "\n".join(replay(f.readlines())) + "\n"
    if len(argv) == 3 and argv[1] == "-o":
        with open(argv[2], "w") as f:
            f.write(out)
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
