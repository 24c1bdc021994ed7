#!/usr/bin/python3
"""Replays the trial lines of a tuner's printed log (dtrain-example-tune,
`dtrain tune` at verbosity 2) through Optuna 3.1 and compares each
decision: `trial N PENDING` is study.ask() (so the n-th created trial is
Optuna's trial.number n), `trial N epoch E: METRIC V [-> STOPPED ...]` a
report and dtrain's decision, `-> TERMINATED` a completion.

The values are the log's 4-digit roundings, so a near tie in the sweep
can become an exact tie here; a difference is a place to look, not proof.
The replay stops at the first difference (the runs part there).

Usage: replay_tune_log.py LOG sha MIN_RESOURCE RF DIRECTION
       replay_tune_log.py LOG hyperband MIN_RESOURCE RF DIRECTION MAX_RESOURCE STUDY_NAME
e.g.   replay_tune_log.py hb.log hyperband 1 3 maximize 9 tune-fashion-mnist
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optuna_replay import replayer  # noqa: E402


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    path, kind, lo, rf, direction = argv[:5]
    params = {"min_resource": lo, "reduction_factor": rf, "direction": direction}
    if kind == "hyperband":
        params.update(max_resource=argv[5], study_name=argv[6])
    r = replayer(kind, params)
    same = 0
    for line in open(path):
        m = re.match(r"trial (\S+) PENDING", line)
        if m:
            r.start(m.group(1))
            continue
        m = re.match(r"trial (\S+) epoch (\d+): \S+ (\S+)( -> (\w+))?", line)
        if not m:
            continue
        trial, epoch, value, ended = m.group(1), int(m.group(2)), float(m.group(3)), m.group(5)
        mine = "prune" if ended == "STOPPED" else "keep"
        theirs = r.report(trial, epoch, value)
        if mine != theirs:  # the two runs part here: Optuna's would report differently
            print(f"{path}: {same} decisions equal Optuna's, then: {line.strip()} "
                  f"(Optuna: {theirs})")
            return 1
        same += 1
        if ended == "TERMINATED" and theirs == "keep":
            r.complete(trial)
    print(f"{path}: all {same} decisions equal Optuna's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
