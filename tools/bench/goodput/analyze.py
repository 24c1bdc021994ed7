#!/usr/bin/python3
"""The figures of the goodput benchmark (run.sh) from its runs' files.

usage: analyze.py --out DIR [--batch 126] [--setup TEXT] MODE...
  DIR/MODE/events.jsonl   dtrain modes: goodput_driver.cpp's lines; torch modes:
                          torch_elastic_fmnist.py's (DIR/MODE/t0 holds the launch time)
  DIR/MODE/kills.log      "<unix time> kill n=K ..." per kill (absent: no kills)
Prints one table row per mode, the goals beside the figures, and writes
DIR/summary.json.

Definitions (the peer README's):
  goodput            distinct steps of the final trajectory x global batch /
                     (end - launch); the trajectory is steps 1..G of the last
                     committed state, so distinct steps = G at the end
  steps lost         per failure: the highest step committed before it minus
                     the step the group went on from (the step counter going
                     back); 0 when it goes on from where it was
  kill -> next step  seconds from the kill to the first step committed after
                     the group noticed the failure (dtrain: its "failure"
                     event; torchrun: a later incarnation's first step)
A kill the group never noticed (the node hosted no replica by then) counts
as a kill but not as a failure.
"""
import argparse
import json
import os
import re
import statistics


def read_jsonl(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:  # a line cut short by a kill
                pass
    return out


def read_kills(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [float(l.split()[0]) for l in f if " kill " in l]


def stalls(evs, commits, longer=0.5):
    """Where training stood still: gaps of more than `longer` s between
    committed steps, by what happened in them (a failure, else a replica
    joining: grew/transfer, else other, e.g. an epoch end's validation)."""
    out = {"failure": [0, 0.0], "join": [0, 0.0], "other": [0, 0.0]}
    events = [(e["t"], e["kind"]) for e in evs if e["ev"] == "event"]
    for (a, _), (b, _) in zip(commits, commits[1:]):
        if b - a <= longer:
            continue
        kinds = {k for t, k in events if a <= t <= b}
        what = ("failure" if "failure" in kinds else
                "join" if kinds & {"grew", "transfer"} else "other")
        out[what][0] += 1
        out[what][1] += b - a
    return out


def dtrain_run(evs, kills):
    start = next(e for e in evs if e["ev"] == "start")
    end = next((e for e in reversed(evs) if e["ev"] == "end"), None)
    commits = [(e["t"], e["g"]) for e in evs
               if (e["ev"] == "step" and e["step"] > e["resumed_at"]) or e["ev"] == "epoch"]
    fails = [e["t"] for e in evs if e["ev"] == "event" and e["kind"] == "failure"]
    # What the trainer says itself (live recovery's events carry "steps lost N").
    said = [int(m.group(1)) for e in evs if e["ev"] == "event"
            for m in [re.search(r"steps lost (\d+)", e["message"])] if m]
    per_kill = []
    for i, tk in enumerate(kills):
        tn = kills[i + 1] if i + 1 < len(kills) else float("inf")
        tf = next((t for t in fails if tk <= t < tn), None)
        if tf is None:
            per_kill.append({"kill": tk, "failure": False})
            continue
        # Only this attempt's steps: those before an earlier failure were
        # counted (or redone) there.
        tp = max((t for t in fails if t < tf), default=float("-inf"))
        before = [g for t, g in commits if tp < t < tf]
        after = next(((t, g) for t, g in commits if t > tf), None)
        k = {"kill": tk, "failure": True, "detect_s": tf - tk}
        if after:
            k["to_step_s"] = after[0] - tk
            k["lost"] = max(0, (max(before) if before else 0) - (after[1] - 1))
        per_kill.append(k)
    g_end = end["g"] if end else (commits[-1][1] if commits else 0)
    t_end = end["t"] if end else evs[-1]["t"]
    return {"stalls": stalls(evs, commits), "t0": start["t0"], "t_end": t_end, "g": g_end, "committed": len(commits),
            "val_acc": end["val_acc"] if end else None,
            "finished": bool(end and end["finished"]), "per_kill": per_kill,
            "failures": len(fails), "trainer_lost": said}


def torch_run(evs, kills, t0):
    starts = [e for e in evs if e["ev"] == "start"]
    steps = [e for e in evs if e["ev"] == "step"]
    end = next((e for e in reversed(evs) if e["ev"] == "end"), None)
    per_kill = []
    for tk in kills:
        # The incarnation running at the kill (possibly still starting up:
        # then it had committed nothing, and the kill cost no steps), and
        # the one the kill made the agent start.
        running = [s for s in starts if s["t_exec"] <= tk]
        r = running[-1]["restart"] if running else 0
        st = next((s for s in starts if s["restart"] > r), None)
        if st is None:
            per_kill.append({"kill": tk, "failure": False})
            continue
        nxt = next((s for s in steps if s["restart"] >= st["restart"]), None)
        last = max((s["step"] for s in steps if s["restart"] == r and s["t"] <= tk),
                   default=st["resume_step"])
        k = {"kill": tk, "failure": True, "detect_s": st["t_exec"] - tk,
             "lost": max(0, last - st["resume_step"])}
        if nxt:
            k["to_step_s"] = nxt["t"] - tk
        per_kill.append(k)
    g_end = end["step"] if end else (steps[-1]["step"] if steps else 0)
    t_end = end["t"] if end else evs[-1]["t"]
    return {"t0": t0, "t_end": t_end, "g": g_end - starts[0]["resume_step"],
            "committed": len(steps), "val_acc": end["val_acc"] if end else None,
            "finished": end is not None, "per_kill": per_kill,
            "failures": max((s["restart"] for s in starts), default=0)}


def figures(mode, out, batch):
    d = os.path.join(out, mode)
    path = os.path.join(d, "events.jsonl")
    if not os.path.exists(path):
        return None
    evs = read_jsonl(path)
    kills = read_kills(os.path.join(d, "kills.log"))
    if mode.startswith("torch"):
        with open(os.path.join(d, "t0")) as f:
            r = torch_run(evs, kills, float(f.read()))
    else:
        r = dtrain_run(evs, kills)
    wall = r["t_end"] - r["t0"]
    hit = [k for k in r["per_kill"] if k["failure"]]
    lost = [k["lost"] for k in hit if "lost" in k]
    to_step = [k["to_step_s"] for k in hit if "to_step_s" in k]
    return {"mode": mode, "wall_s": wall, "steps": r["g"], "goodput": r["g"] * batch / wall,
            "val_acc": r["val_acc"], "finished": r["finished"], "kills": len(kills),
            "failures": len(hit), "redone_steps": max(0, r["committed"] - r["g"]),
            "lost_median": statistics.median(lost) if lost else None,
            "lost_max": max(lost) if lost else None,
            "to_step_median_s": statistics.median(to_step) if to_step else None,
            "to_step_max_s": max(to_step) if to_step else None,
            "trainer_lost": r.get("trainer_lost", []), "stalls": r.get("stalls"),
            "per_kill": r["per_kill"]}


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def goals(rows):
    g = {m["mode"]: m for m in rows}
    lines = []

    def ratio(a, b):
        if a in g and b in g and g[b]["goodput"] > 0:
            return g[a]["goodput"] / g[b]["goodput"]
        return None

    def goal(text, value, ok):
        lines.append(f"- {text}: {value} ({'met' if ok else 'NOT met'})")

    for m in ("live", "checkpoint"):
        if m in g and g[m]["lost_max"] is not None:
            goal(f"{m}: steps lost per failure <= 1", f"median {g[m]['lost_median']}, "
                 f"max {g[m]['lost_max']}", g[m]["lost_max"] <= 1)
        if m in g and g[m]["to_step_median_s"] is not None:
            goal(f"{m}: kill -> next committed step <= 0.5 s",
                 f"median {g[m]['to_step_median_s']:.2f} s, max {g[m]['to_step_max_s']:.2f} s",
                 g[m]["to_step_max_s"] <= 0.5)
        for other, need, what in (("free", 0.9, "failure-free"),
                                  ("checkpoint", 1.5, "dtrain checkpoint-restart"),
                                  ("torch", 2.0, "torchrun")):
            r = ratio(m, other)
            if r is not None and m != other:
                goal(f"{m}: goodput >= {need}x {what}", f"{r:.2f}x", r >= need)
        if m in g and "free" in g and g[m]["val_acc"] is not None and g["free"]["val_acc"]:
            d = 100 * (g[m]["val_acc"] - g["free"]["val_acc"])
            goal(f"{m}: final accuracy within 0.3 points of failure-free", f"{d:+.2f} points",
                 abs(d) <= 0.3)
    r = ratio("torch", "torch-free")
    if r is not None:
        lines.append(f"- torch: goodput {r:.2f}x its failure-free run")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=126)
    ap.add_argument("--setup", default="")
    ap.add_argument("modes", nargs="+")
    a = ap.parse_args()
    rows = [r for r in (figures(m, a.out, a.batch) for m in a.modes) if r]
    if a.setup:
        print(f"setup: {a.setup}")
    print("| mode | wall s | steps | goodput samples/s | kills | failures | steps lost per "
          "failure (median, max) | kill -> next committed step s (median, max) | "
          "redone steps | val_acc | finished |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['wall_s']:.1f} | {r['steps']} | {r['goodput']:.0f} | "
              f"{r['kills']} | {r['failures']} | {fmt(r['lost_median'], 'g')}, "
              f"{fmt(r['lost_max'], 'g')} | {fmt(r['to_step_median_s'], '.2f')}, "
              f"{fmt(r['to_step_max_s'], '.2f')} | {r['redone_steps']} | "
              f"{fmt(r['val_acc'], '.4f')} | {r['finished']} |")
    for r in rows:
        if r["stalls"]:
            print(f"{r['mode']}: training stood still (gaps > 0.5 s between steps): " +
                  ", ".join(f"{k} {n} x, {sec:.1f} s" for k, (n, sec) in r["stalls"].items()))
    for r in rows:
        if r["trainer_lost"]:
            print(f"{r['mode']}: the trainer's own 'steps lost' per failure: median "
                  f"{statistics.median(r['trainer_lost'])}, max {max(r['trainer_lost'])}")
    print()
    for line in goals(rows):
        print(line)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"setup": a.setup, "modes": rows, "goals": goals(rows)}, f, indent=1)


if __name__ == "__main__":
    main()
