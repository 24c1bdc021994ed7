#!/bin/bash
# The goodput benchmark of issue 28 (README.md beside this file): dtrain's
# recovery modes and torchrun's restart-everything elastic DDP side by side,
# one node (worker) killed with -9 every PERIOD seconds, in one invocation.
#
# usage: tools/bench/goodput/run.sh [-d DURATION] [-p PERIOD] [-e EPOCHS] [-m MODES]
#            [-M mlp|cnn] [-o OUT] [-i MONITOR_INTERVAL] [-j JITTER] [-L] [-b BUILD]
#   -d  kill window in seconds (default 300): no kill later than this after
#       the run's launch; each run is also cut off (preempted, then killed) at
#       3 x DURATION + 120 s
#   -p  seconds between kills (default 15), plus a random [0, JITTER) each
#   -e  epochs of training (default 15, the shipped experiment's)
#   -m  modes, in this order (default "live checkpoint free torch torch-free"):
#       live        dtrain, recovery: live, kills
#       checkpoint  dtrain, recovery: checkpoint (restart from the epoch checkpoint), kills
#       free        dtrain, no kills (the build's default recovery)
#       torch       torchrun --max_restarts, 3 workers, kills
#       torch-free  the same, no kills
#   -M  mlp (experiments/fashion_mnist.yaml, default) or cnn (fashion_mnist_cnn.yaml)
#   -o  output directory (default /tmp/dtrain-goodput-<time>)
#   -i  torchrun --monitor_interval (default 0.5, the tuned value; its default is 5)
#   -j  kill jitter in seconds (default 1)
#   -L  loopback processes instead of network namespaces
#   -b  build directory (default: build beside tools/)
# Node hosts: network namespaces 10.213.0.1-4 (head + driver on .1, one node
# with one slot on each of .2-.4, TLS between them) when run as root with
# `ip netns`; else (or with -L) loopback processes. torchrun runs on loopback.
# $GOODPUT_PROGRESS_SECONDS: how often the chief reports (default 0.0001 s:
# every step; a larger one costs the steps-lost figures their precision).
# Every process started here is stopped by pid at the end; prints the table
# of analyze.py and writes OUT/summary.json.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
duration=300 period=15 epochs=15 modes="live checkpoint free torch torch-free" model=mlp
out="" monitor=0.5 jitter=1 loopback=0 build="$repo/build"
while getopts "d:p:e:m:M:o:i:j:Lb:" opt; do
    case $opt in
        d) duration=$OPTARG ;; p) period=$OPTARG ;; e) epochs=$OPTARG ;; m) modes=$OPTARG ;;
        M) model=$OPTARG ;; o) out=$OPTARG ;; i) monitor=$OPTARG ;; j) jitter=$OPTARG ;;
        L) loopback=1 ;; b) build=$OPTARG ;;
        *) sed -n '2,/^set -u/p' "$0" | sed '$d' >&2; exit 2 ;;
    esac
done
case $model in
    mlp) yaml=$repo/experiments/fashion_mnist.yaml ;;
    cnn) yaml=$repo/experiments/fashion_mnist_cnn.yaml ;;
    *) echo "run.sh: -M $model: mlp or cnn" >&2; exit 2 ;;
esac
dtrain=$build/bin/dtrain driver=$build/bin/dtrain-bench-goodput
peers=${DTRAIN_PEERS_DIR:-$repo/../shared/peers}
for f in "$dtrain" "$driver"; do
    [ -x "$f" ] || { echo "run.sh: no $f (cmake --build build --target dtrain dtrain-bench-goodput)" >&2; exit 2; }
done
out=${out:-/tmp/dtrain-goodput-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 2
batch=126             # splits over 3 and over 2 replicas alike
cutoff=$(awk -v d="$duration" 'BEGIN { printf "%d", 3 * d + 120 }')

now() { echo "$EPOCHREALTIME"; }
log() { echo "[goodput $(date -u +%H:%M:%S)] $*" >&2; }

if [ "$loopback" = 0 ] && { [ "$(id -u)" != 0 ] || ! ip netns add "gp$$-probe" 2>/dev/null; }; then
    log "no network namespaces here (not root, or ip netns failed): loopback processes"
    loopback=1
fi
[ "$loopback" = 0 ] && ip netns del "gp$$-probe"
# shellcheck source=lab.sh
. "$here/lab.sh"
run_dir=""
trap 'lab_down; lab_destroy' EXIT
trap 'exit 130' INT TERM
lab_create || exit 1

# ---- one dtrain run: head, 3 supervised nodes, the driver, the killer -------
run_dtrain() {  # MODE RECOVERY KILLS(0|1)
    local mode=$1 recovery=$2 kills=$3 dir=$out/$1
    mkdir -p "$dir"
    run_dir=$dir
    head_up "$dir" || { lab_down; return 1; }
    local h
    for h in 1 2 3; do supervise "$h" "$dir" 2>> "$dir/supervisor.err" & sup_pids+=($!); done
    for h in 1 2 3; do wait_for_file "$dir/node$h.port" 20 || { log "$mode: node $h did not start"; lab_down; return 1; }; done
    local t0; t0=$(now)
    log "$mode: training $epochs epochs of $model on 3 replicas (recovery: ${recovery:-default})"
    (on_host 0 timeout -s KILL "$cutoff" "$driver" --address "$head_address" --experiment "$yaml" \
        --events "$dir/events.jsonl" --placement-file "$dir/placement" \
        ${recovery:+--recovery "$recovery"} --replicas 3 --min-replicas 2 --global-batch $batch \
        --epochs "$epochs" --checkpoint-dir "$dir/checkpoints" --deadline $((cutoff - 60)) \
        --progress-seconds "${GOODPUT_PROGRESS_SECONDS:-0.0001}" --t0 "$t0") > "$dir/driver.log" 2>&1 &
    local drv=$!
    local killer=""
    if [ "$kills" = 1 ]; then kill_nodes "$dir" "$drv" & killer=$!; fi
    wait "$drv"; local rc=$?
    [ -n "$killer" ] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
    log "$mode: driver exited $rc; $(tail -1 "$dir/driver.log")"
    lab_down
}

# ---- one torchrun run, on loopback -----------------------------------------
run_torch() {  # MODE KILLS(0|1)
    local mode=$1 kills=$2 dir=$out/$1
    mkdir -p "$dir"
    : > "$dir/kills.log"
    local t0; t0=$(now)
    echo "$t0" > "$dir/t0"
    log "$mode: torchrun, 3 workers, $epochs epochs, --monitor_interval $monitor"
    OMP_NUM_THREADS=1 /usr/bin/python3 /usr/bin/torchrun --nnodes 1 --nproc_per_node 3 \
        --max_restarts 1000 --monitor_interval "$monitor" --rdzv_backend c10d \
        --rdzv_endpoint "127.0.0.1:$((29700 + RANDOM % 200))" --redirects 2 --tee 2 \
        "$here/torch_peer.py" --global-batch $batch --epochs "$epochs" \
        --checkpoint "$dir/checkpoints" --events "$dir/events.jsonl" --kills "$dir/kills.log" \
        --t0 "$t0" > "$dir/torchrun.log" 2>&1 &
    local agent=$!
    local killer="" guard
    if [ "$kills" = 1 ]; then
        "$peers/kill_schedule.sh" -f "$period" -j "$jitter" -m torch_peer.py -l "$dir/kills.log" \
            "$agent" "$period" "$duration" > "$dir/killer.log" 2>&1 &
        killer=$!
    fi
    ( sleep "$cutoff"; kill -TERM "$agent" 2>/dev/null ) & guard=$!
    wait "$agent"; local rc=$?
    kill "$guard" 2>/dev/null; wait "$guard" 2>/dev/null
    [ -n "$killer" ] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; }
    log "$mode: torchrun exited $rc; $(grep summary: "$dir/torchrun.log" | tail -1)"
}

for mode in $modes; do
    case $mode in
        live) run_dtrain live live 1 ;;
        checkpoint) run_dtrain checkpoint checkpoint 1 ;;
        free) run_dtrain free "" 0 ;;
        torch) run_torch torch 1 ;;
        torch-free) run_torch torch-free 0 ;;
        *) log "unknown mode $mode (live checkpoint free torch torch-free)" ;;
    esac
done
/usr/bin/python3 "$here/analyze.py" --out "$out" --batch $batch \
    --setup "$model, $epochs epochs, kill every ${period}+[0,${jitter}) s for ${duration} s, $([ "$loopback" = 1 ] && echo loopback processes || echo network namespaces), torchrun --monitor_interval $monitor" \
    $modes
