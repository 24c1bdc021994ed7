#!/usr/bin/env python3
"""What a watched dashboard costs the training (tools/bench/bench.sh dashboard).

One `dtrain train --embedded --dashboard` run of the Fashion-MNIST MLP (one
slot); the run is cut into phases of EPOCHS epochs each (switching at the
epoch lines the run prints), alternately unwatched and watched by one poller
that does what the page does in a browser (docs/dashboard.md): every
second /api/v1/cluster, /api/v1/experiments, the experiment's trials and the
running trial's new reports (?since=), plus a /metrics scrape every second
(a Prometheus scraping every 15 s costs less). Same run, interleaved, so
drift of the machine hits both alike. Each epoch's samples/s is the
trainer's own figure from its epoch line. Prints a table per phase, the
medians and their ratio; the goal is a cost under 2%. Also the CPU the
training process's service threads use (/proc/PID/task/*/stat: every thread
but the replica's compute threads; the dashboard's I/O thread, the head,
the store actor, CAF's workers) in each kind of phase: the dashboard's own
cost in CPU, which other load on a shared machine does not blur as it
blurs the throughput.

Usage: bench_dashboard.py DTRAIN_BINARY [--phases N] [--epochs-per-phase EPOCHS]
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def get(conn, path, token):
    try:
        conn.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
    except (http.client.RemoteDisconnected, ConnectionError):
        # The server closes a keep-alive connection idle for 30 s (an
        # unwatched phase); a browser reconnects, so do we.
        conn.close()
        conn.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"{path}: HTTP {r.status}: {body[:200]!r}")
    return body


def wait_for(path, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path) and open(path).read().strip():
            return open(path).read().strip()
        time.sleep(0.1)
    raise RuntimeError(f"{path} did not appear in {seconds} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--phases", type=int, default=12, help="phases (half watched)")
    ap.add_argument("--epochs-per-phase", type=int, default=2)
    a = ap.parse_args()

    home = tempfile.mkdtemp(prefix="dtrain-bench-dashboard-")
    env = dict(os.environ, DTRAIN_HOME=home)
    exp = os.path.join(home, "fashion_mnist.yaml")
    # The shipped Fashion-MNIST MLP on one slot (about 2 s per epoch here),
    # long enough to outlast every phase.
    with open(exp, "w") as f:
        f.write("name: bench-dashboard\noperator: mlp_classifier\n"
                "hyperparameters: {hidden: [256, 128, 100], activation: relu, optimizer: adam, "
                "lr: 0.001}\n"
                "resources: {slots_per_trial: 1}\nglobal_batch_size: 128\nepochs: 1000000\n")
    url_file = os.path.join(home, "dashboard.url")
    log = open(os.path.join(home, "train.log"), "w")
    train = subprocess.Popen([a.binary, "train", exp, "--embedded", "--dashboard",
                              "--dashboard-file", url_file], stdout=log, stderr=subprocess.STDOUT,
                             env=env)
    try:
        url = wait_for(url_file, 30)
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        token = open(os.path.join(home, "dashboard-token")).read().strip()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        log_path = os.path.join(home, "train.log")
        # Phases switch at epoch boundaries, seen in the run's own epoch
        # lines (flushed per line; reading them touches no dashboard).
        def epochs_done():
            return [float(line.rsplit(" samples/s", 1)[0].rsplit(" ", 1)[1])
                    for line in open(log_path) if "[chief] epoch " in line and " samples/s" in line]
        def wait_epochs(n, watched):
            target = len(epochs_done()) + n
            requests = 0
            since = 0
            deadline = time.time() + 600
            while len(epochs_done()) < target and time.time() < deadline:
                tick = time.time()
                if watched:
                    get(conn, "/api/v1/cluster", token)
                    get(conn, "/api/v1/experiments", token)
                    get(conn, "/api/v1/experiments/1/trials", token)
                    body = json.loads(get(conn, f"/api/v1/trials/1-00000/metrics?since={since}",
                                          token))
                    if body["reports"]:
                        since = body["reports"][-1]["epoch"]
                    get(conn, "/metrics", token)
                    requests += 5
                time.sleep(max(0.0, (1.0 if watched else 0.05) - (time.time() - tick)))
            return requests
        def thread_ticks():
            # utime + stime per thread of the training process.
            out = {}
            for tid in os.listdir(f"/proc/{train.pid}/task"):
                try:
                    fields = open(f"/proc/{train.pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                    out[tid] = int(fields[11]) + int(fields[12])
                except OSError:
                    pass
            return out
        def service_cpu(before, after, seconds):
            # CPU seconds per second of the threads that are not training:
            # all but those with over 10% of the process's CPU in the phase
            # (the replica's and OpenBLAS's). The dashboard's I/O thread,
            # the head, the store actor and CAF's workers are among them.
            used = {t: after[t] - before.get(t, 0) for t in after}
            total = sum(used.values()) or 1
            small = sum(v for v in used.values() if v <= 0.1 * total)
            return small / os.sysconf("SC_CLK_TCK") / seconds
        wait_epochs(1, False)  # warm-up: the first epoch counts for nothing
        phases = []  # (watched, requests, rates, cpu seconds, samples)
        for i in range(a.phases):
            watched = i % 2 == 1
            before = len(epochs_done())
            ticks, t0 = thread_ticks(), time.time()
            requests = wait_epochs(a.epochs_per_phase, watched)
            service = service_cpu(ticks, thread_ticks(), time.time() - t0)
            phases.append((watched, requests, epochs_done()[before:before + a.epochs_per_phase],
                           service))
    finally:
        train.terminate()
        try:
            train.wait(60)
        except subprocess.TimeoutExpired:
            train.kill()

    print(f"{'phase':>5} {'watched':>7} {'requests':>8} {'epochs':>6} {'median samples/s':>16} "
          f"{'service CPU':>11}")
    rates = {False: [], True: []}
    cpu = {False: [], True: []}
    for i, (watched, requests, inside, service) in enumerate(phases):
        rates[watched] += inside
        cpu[watched].append(service)
        med = statistics.median(inside) if inside else float("nan")
        print(f"{i:>5} {('yes' if watched else 'no'):>7} {requests:>8} {len(inside):>6} {med:>16.0f} "
              f"{service * 100:>10.2f}%")
    if not rates[False] or not rates[True]:
        print("bench_dashboard: no epochs measured", file=sys.stderr)
        return 1
    off = statistics.median(rates[False])
    on = statistics.median(rates[True])
    print(f"unwatched: median {off:.0f} samples/s over {len(rates[False])} epochs")
    print(f"watched:   median {on:.0f} samples/s over {len(rates[True])} epochs")
    c_off = statistics.median(cpu[False])
    c_on = statistics.median(cpu[True])
    print(f"service threads (all but the training ones): {c_off * 100:.2f}% of a core "
          f"unwatched, {c_on * 100:.2f}% watched: the dashboard's own cost is "
          f"{(c_on - c_off) * 100:+.2f}% of a core")
    print(f"dashboard cost: watched/unwatched throughput = {on / off:.4f} ({(1 - on / off) * 100:+.2f}% "
          f"lost; goal < 2%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
