#!/bin/bash
# Issue 29's ZeRO benchmark (README.md beside this file): PyTorch's
# ZeroRedundancyOptimizer recipe model (20 x Linear(2000, 2000), Adam) on the
# CPU, N = 2 and 4 ranks, PyTorch 1.13's DDP + Adam and DDP +
# ZeroRedundancyOptimizer beside dtrain's ZeRO stages, in one invocation.
# Builds nothing: expects build/bin/dtrain and build/bin/dtrain-bench-zero
# (cmake --build build --target dtrain-bench-zero).
#
# usage: tools/bench/zero/run.sh [-r REPEATS] [-n "2 4"] [-s "0 1 2 3"] [-m "ddp zero"]
#            [-b BATCH] [-t STEPS] [-w WARMUP] [-o OUT] [-B BUILD] [-T TIMEOUT]
#   -r  repeats, interleaved (default 3): the table shows medians
#   -n  world sizes (default "2 4")
#   -s  dtrain ZeRO stages (default "0 1 2 3")
#   -m  PyTorch modes (default "ddp zero"; "" for none)
#   -b  samples per rank per step (default 16)
#   -t  timed steps (default 10), after -w untimed ones (default 3)
#   -o  output directory (default /tmp/dtrain-zero-<time>): results.jsonl
#       (every RESULT line), the programs' logs, summary.txt
#   -B  build directory (default: build beside tools/)
#   -T  seconds one program may run before its process group is killed
#       (default 1200)
# One thread per rank on both sides (OMP/OpenBLAS 1; torch.set_num_threads(1);
# cpus_per_replica 1). Each program runs under timeout(1), in the process
# group timeout leads, killed by its id when the program ends or times out,
# so nothing outlives the run.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
repeats=3 worlds="2 4" stages="0 1 2 3" modes="ddp zero" batch=16 steps=10 warmup=3
out="" build="$repo/build" limit=1200
while getopts "r:n:s:m:b:t:w:o:B:T:" opt; do
    case $opt in
        r) repeats=$OPTARG ;; n) worlds=$OPTARG ;; s) stages=$OPTARG ;; m) modes=$OPTARG ;;
        b) batch=$OPTARG ;; t) steps=$OPTARG ;; w) warmup=$OPTARG ;; o) out=$OPTARG ;;
        B) build=$OPTARG ;; T) limit=$OPTARG ;;
        *) sed -n '2,/^set -u/p' "$0" | sed '$d' >&2; exit 2 ;;
    esac
done
bench=$build/bin/dtrain-bench-zero
for f in "$build/bin/dtrain" "$bench"; do
    [ -x "$f" ] || { echo "run.sh: no $f (cmake --build build --target dtrain-bench-zero)" >&2; exit 2; }
done
out=${out:-/tmp/dtrain-zero-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
: > "$out/results.jsonl"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

log() { echo "[zero $(date -u +%H:%M:%S)] $*" >&2; }

# Memory: the unsharded configurations hold about 1.9 GB per rank.
need=$(( $(echo "$worlds" | tr ' ' '\n' | sort -n | tail -1) * 2000 ))
avail=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
[ "$avail" -ge "$need" ] || log "warning: $avail MiB available, about $need MiB needed at the largest N"

current=""
trap '[ -n "$current" ] && kill -KILL -- "-$current" 2>/dev/null; exit 130' INT TERM

# Runs COMMAND... in a process group of its own (stdout+stderr to LOG), its
# RESULT lines into results.jsonl; kills the group when it ends or after
# $limit s.
run_group() {  # LOG COMMAND...
    local log_file=$1; shift
    log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    # timeout leads a process group of its own and signals all of it.
    timeout -s KILL "$limit" "$@" > "$log_file" 2>&1 &
    current=$!
    wait "$current"; local rc=$?
    kill -KILL -- "-$current" 2>/dev/null  # anything of it still there
    current=""
    sed -n 's/^RESULT //p' "$log_file" >> "$out/results.jsonl"
    if [ "$rc" != 0 ]; then
        local why
        why=$(grep -iE 'error|traceback|did not start|no zero_stage' "$log_file" | tail -3)
        log "exit $rc: $* (see $log_file): ${why:-$(tail -2 "$log_file")}"
    fi
}

for r in $(seq 1 "$repeats"); do
    for n in $worlds; do
        if [ -n "$modes" ]; then
            log "repeat $r, N=$n: PyTorch $modes"
            # shellcheck disable=SC2086
            run_group "$out/torch-n$n-r$r.log" /usr/bin/python3 "$here/torch_zero_peer.py" \
                --nprocs "$n" --modes $modes --batch "$batch" --steps "$steps" --warmup "$warmup"
        fi
        log "repeat $r, N=$n: dtrain stages $stages"
        # shellcheck disable=SC2086
        run_group "$out/dtrain-n$n-r$r.log" "$bench" --replicas "$n" --stages $stages \
            --batch "$batch" --steps "$steps" --warmup "$warmup"
    done
done
/usr/bin/python3 "$here/summarize.py" "$out/results.jsonl" \
    --setup "$(getconf _NPROCESSORS_ONLN) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); batch $batch/rank, $steps timed steps after $warmup; $repeats repeats; 1 thread per rank" \
    | tee "$out/summary.txt"
log "results in $out"
