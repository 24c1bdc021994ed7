#!/bin/bash
# The data benchmarks of issue 27 in one command, dtrain beside its peers:
#
#   tools/bench/data/run.sh [DATADIR]        (default /tmp/dtrain-data)
#
# 1. prepare.py writes the files (skips what exists);
# 2. the loader alone: torch_loader.py and dtrain-bench-loader with the same
#    workers, batch 128, N=1 and N=2, median of 5 epochs; prints dtrain/torch
#    per case, and the shards cold/warm ratio;
# 3. training: `dtrain train` on the Fashion-MNIST MLP and CNN from CSV, PNG,
#    .npy (and the MLP from shards, dropped from the page cache first) and on
#    the built-in in-memory baselines, shortened to MLP_EPOCHS / CNN_EPOCHS
#    epochs (a copy of each YAML with its epochs replaced), the sources
#    taking turns for MLP_ROUNDS / CNN_ROUNDS rounds (so that a change of the
#    machine's load does not fall on one source only); prints the median
#    samples/s of the epochs and file/memory ratios, and the first epoch's
#    ratio (the only cold one of the shards run: the page cache refills);
# 4. the scikit-learn tables through dtrain (full YAMLs) and
#    sklearn_baseline.py, accuracies side by side.
#
# Environment: BUILD (default ROOT/build; needs bin/dtrain and
# bin/dtrain-bench-loader), WORKERS (2), MLP_EPOCHS (3), CNN_EPOCHS (2),
# MLP_ROUNDS (3), CNN_ROUNDS (1),
# LOG (where the raw outputs go; default a new /tmp/dtrain-bench-data.XXXX),
# STEPS ("prepare loader train tables", any subset).
# Every step runs under `timeout`. The load average is printed before and
# after each step: the figures move with other work on the machine.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
DATADIR=${1:-/tmp/dtrain-data}
BUILD=${BUILD:-$ROOT/build}
WORKERS=${WORKERS:-2}
MLP_EPOCHS=${MLP_EPOCHS:-3}
CNN_EPOCHS=${CNN_EPOCHS:-2}
MLP_ROUNDS=${MLP_ROUNDS:-3}
CNN_ROUNDS=${CNN_ROUNDS:-1}
STEPS=${STEPS:-prepare loader train tables}
LOG=${LOG:-$(mktemp -d /tmp/dtrain-bench-data.XXXX)}
PY=/usr/bin/python3
DTRAIN=$BUILD/bin/dtrain
LOADER=$BUILD/bin/dtrain-bench-loader
mkdir -p "$LOG"

for bin in "$DTRAIN" "$LOADER"; do
  [[ -x $bin ]] || { echo "run.sh: $bin is missing: cmake --build build --target dtrain dtrain-bench-loader" >&2; exit 2; }
done
want() { [[ " $STEPS " == *" $1 "* ]]; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "run.sh: DATADIR $DATADIR, workers $WORKERS, logs in $LOG, $(nproc) CPUs, load $(load)"

# ------------------------------------------------------------------ prepare
if want prepare; then
  timeout 1800 "$PY" "$HERE/prepare.py" "$DATADIR" > "$LOG/prepare.log" 2>&1 ||
    { cat "$LOG/prepare.log"; exit 1; }
  echo "== prepare: done ($(grep -c '^wrote' "$LOG/prepare.log" || true) written), load $(load)"
fi

# ------------------------------------------------------------- loader alone
if want loader; then
  echo "== loader alone: torch_loader.py, then dtrain-bench-loader (load $(load))"
  timeout 3600 "$PY" "$HERE/torch_loader.py" "$DATADIR" --workers "$WORKERS" \
    > "$LOG/torch_loader.log" 2>&1 || { cat "$LOG/torch_loader.log"; exit 1; }
  timeout 1800 "$LOADER" "$DATADIR" --workers "$WORKERS" > "$LOG/loader_bench.log" 2>&1 ||
    { cat "$LOG/loader_bench.log"; exit 1; }
  cat "$LOG/torch_loader.log" "$LOG/loader_bench.log"
  "$PY" - "$LOG/torch_loader.log" "$LOG/loader_bench.log" <<'EOF'
import re, sys
pat = re.compile(r"^(torch|dtrain) (\S+) N=(\d+) workers=(\d+): ([\d,]+) samples/s")
rate = {}
for path in sys.argv[1:]:
    for line in open(path):
        m = pat.match(line)
        if m:
            rate[(m[1], m[2], int(m[3]))] = float(m[5].replace(",", ""))
print("\nloader alone, samples/s (median of 5 epochs), dtrain / torch:")
for fmt in ("csv", "png", "npy"):
    for n in (1, 2):
        d, t = rate.get(("dtrain", fmt, n)), rate.get(("torch", fmt, n))
        if d and t:
            print(f"  {fmt:6} N={n}: dtrain {d:>12,.0f}  torch {t:>9,.0f}  ratio {d / t:7.1f}x")
for n in (1, 2):
    w, c = rate.get(("dtrain", "shards", n)), rate.get(("dtrain", "shards-cold", n))
    if w and c:
        print(f"  shards N={n}: warm {w:,.0f}  cold {c:,.0f}  cold/warm {c / w:.2f}")
EOF
  echo "== loader alone: done, load $(load)"
fi

# ---------------------------------------------------------------- training
# A copy of experiment $1 with every `epochs:` line set to $2.
shortened() {
  local out="$LOG/$(basename "$1" .yaml)-e$2.yaml"
  sed -E "s/^(  )?epochs: .*/\1epochs: $2/" "$1" > "$out"
  echo "$out"
}

# `dtrain train` on $1, its output in $LOG/NAME.log (NAME.rR.log for round R).
train() {
  local name
  name=$(basename "$1" .yaml)${2:+.r$2}
  echo "   $name (load $(load))"
  timeout 1800 "$DTRAIN" train "$1" > "$LOG/$name.log" 2>&1 ||
    { tail -20 "$LOG/$name.log"; echo "run.sh: dtrain train $1 failed" >&2; exit 1; }
}

if want train; then
  echo "== training runs: MLP $MLP_EPOCHS epochs x $MLP_ROUNDS rounds, CNN $CNN_EPOCHS epochs" \
       "x $CNN_ROUNDS rounds (load $(load))"
  for model in mlp cnn; do
    epochs=$MLP_EPOCHS rounds=$MLP_ROUNDS
    [[ $model == cnn ]] && epochs=$CNN_EPOCHS rounds=$CNN_ROUNDS
    for round in $(seq 1 "$rounds"); do
      for src in memory csv png npy shards; do
        yaml=$HERE/experiments/fmnist_${model}_$src.yaml
        [[ -f $yaml ]] || continue
        if [[ $src == shards ]]; then
          [[ -d $DATADIR/fmnist/shards-train ]] ||
            "$LOADER" "$DATADIR" --formats shards --nranks 1 --epochs 1 --resume-trials 1 > /dev/null
          "$LOADER" --evict "$DATADIR/fmnist/shards-train"
        fi
        train "$(shortened "$yaml" "$epochs")" "$round"
      done
    done
  done
  "$PY" - "$LOG" "$MLP_EPOCHS" "$CNN_EPOCHS" <<'EOF'
import glob, re, statistics, sys
log, epochs = sys.argv[1], {"mlp": sys.argv[2], "cnn": sys.argv[3]}
ep = re.compile(r"epoch (\d+)/\d+ .* ([\d.]+) samples/s")
acc = re.compile(r"^validation: loss ([\d.]+), accuracy ([\d.]+)")
print("\ntraining from files vs from memory (samples/s: median of all epochs of all rounds;"
      " first epochs: median of each run's epoch 1, the only cold one of the shards runs):")
for model in ("mlp", "cnn"):
    rows = {}
    for src in ("memory", "csv", "png", "npy", "shards"):
        runs = sorted(glob.glob(f"{log}/fmnist_{model}_{src}-e{epochs[model]}.r*.log"))
        rates, firsts, a = [], [], []
        for run in runs:
            text = open(run).read().splitlines()
            r = [float(m[2]) for m in map(ep.search, text) if m]
            rates += r
            firsts += r[:1]
            a += [m[2] for m in map(acc.match, text) if m][-1:]
        if rates:
            rows[src] = (statistics.median(rates), statistics.median(firsts), rates, a)
    base = rows.get("memory", (0, 0))
    for src, (med, first, rates, a) in rows.items():
        ratio = f"{med / base[0]:.3f}" if base[0] else "-"
        first_ratio = f"{first / base[1]:.3f}" if base[1] else "-"
        label = "shards (cold)" if src == "shards" else src
        print(f"  {model} {label:14} {med:>9,.0f} samples/s  file/memory {ratio} "
              f"(first epochs: {first_ratio})  accuracy {'/'.join(a)} after {epochs[model]} "
              f"epochs\n      epochs: " + " ".join(f"{r:,.0f}" for r in rates))
EOF
  echo "== training runs: done, load $(load)"
fi

# ------------------------------------------------------------------ tables
if want tables; then
  echo "== scikit-learn tables: dtrain train (hidden [64], standardize, 30 epochs) and sklearn_baseline.py"
  for t in digits breast_cancer wine; do
    train "$HERE/experiments/sk_$t.yaml"
  done
  timeout 600 "$PY" "$HERE/sklearn_baseline.py" "$DATADIR" > "$LOG/sklearn_baseline.log" 2>&1 ||
    { cat "$LOG/sklearn_baseline.log"; exit 1; }
  "$PY" - "$LOG" <<'EOF'
import re, sys
log = sys.argv[1]
base = {}
for line in open(f"{log}/sklearn_baseline.log"):
    m = re.match(r"^(\w+) \(.*\): sklearn MLP ([\d.]+), torch MLP ([\d.]+)", line)
    if m:
        base[m[1]] = (m[2], m[3])
print("\ntest accuracy, same split:        dtrain   sklearn MLP   torch MLP")
for t in ("digits", "breast_cancer", "wine"):
    a = [m[1] for m in map(re.compile(r"^validation: loss [\d.]+, accuracy ([\d.]+)").match,
                            open(f"{log}/sk_{t}.log")) if m]
    s, p = base.get(t, ("?", "?"))
    print(f"  {t:28} {a[-1] if a else '?':>8}   {s:>11}   {p:>9}")
EOF
  echo "== scikit-learn tables: done, load $(load)"
fi
echo "run.sh: done, logs in $LOG"
