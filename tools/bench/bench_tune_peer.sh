#!/usr/bin/env bash
# The Fashion-MNIST ASHA sweep end to end, dtrain against its peer in one run:
#   1. dtrain tune experiments/fashion_mnist_asha.yaml --verbosity 1 (timed)
#   2. the same sweep with Optuna 3.1 + PyTorch 1.13 (tools/peer/optuna_torch_sweep.py)
# then a side-by-side table: wall time, epochs run, best validation accuracy.
# Takes about 4 minutes on 2 cores (each side about 2). Logs go to $DTRAIN_BENCH_LOGS (default a temp dir).
#   tools/bench/bench_tune_peer.sh [--skip-dtrain] [--skip-peer]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DTRAIN_BUILD_DIR:-$root/build}/bin
logs=${DTRAIN_BENCH_LOGS:-$(mktemp -d /tmp/dtrain-tune-peer.XXXXXX)}
mkdir -p "$logs"
run_dtrain=1 run_peer=1
for a in "$@"; do
  case "$a" in
    --skip-dtrain) run_dtrain=0 ;;
    --skip-peer) run_peer=0 ;;
    *) echo "bench_tune_peer.sh: unknown flag '$a'" >&2; exit 2 ;;
  esac
done

now() { date +%s.%N; }

# The peer's sweep settings from the experiment file, so that the two stay
# the same sweep: `key: value` lines of the searcher section (and the seed).
experiment=$root/experiments/fashion_mnist_asha.yaml
setting() { sed -n "s/^ *$1: *\([0-9]*\).*/\1/p" "$experiment" | head -n 1; }
trials=$(setting max_trials) jobs=$(setting max_concurrent_trials)
grace=$(setting grace_period) rf=$(setting divisor) seed=$(setting seed)
epochs=$(sed -n 's/^ *max_length: *{ *epochs: *\([0-9]*\).*/\1/p' "$experiment")
peer_args=(--trials "${trials:-16}" --jobs "${jobs:-2}" --epochs "${epochs:-15}"
           --grace "${grace:-1}" --rf "${rf:-3}" --seed "${seed:-0}")

d_wall=- d_epochs=- d_best=- d_params=- d_pruned=-
if [ $run_dtrain = 1 ]; then
  # Slots for max_concurrent_trials trials of one replica, as the peer's n_jobs.
  echo "== dtrain tune experiments/fashion_mnist_asha.yaml --verbosity 1 --local-slots ${jobs:-2}" \
       "(log: $logs/dtrain.log)"
  t0=$(now)
  "$bin/dtrain" tune "$experiment" --verbosity 1 --local-slots "${jobs:-2}" \
    > "$logs/dtrain.log" 2>&1 || echo "dtrain tune exited with $?" >&2
  t1=$(now)
  tail -n 30 "$logs/dtrain.log"
  d_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  # "epochs run: 97 of the 240 that 16 trials ..." and
  # "best trial t07: validation_accuracy 0.8812 at epoch 15 of 15" + params line
  d_epochs=$(sed -n 's/^epochs run: \([0-9]*\) of.*/\1/p' "$logs/dtrain.log" | tail -n 1)
  d_best=$(sed -n 's/^best trial [^:]*: [a-z_]* \([0-9.]*\).*/\1/p' "$logs/dtrain.log" | tail -n 1)
  d_params=$(grep -A1 '^best trial' "$logs/dtrain.log" | tail -n 1 | sed 's/^ *//')
  d_pruned=$(grep -c '^trial [^ ]* STOPPED after' "$logs/dtrain.log" || true)
fi

p_wall=- p_epochs=- p_best=- p_params=- p_pruned=-
if [ $run_peer = 1 ]; then
  echo "== optuna + torch: tools/peer/optuna_torch_sweep.py ${peer_args[*]} (log: $logs/optuna.log)"
  if [ -x /usr/bin/python3 ]; then
    /usr/bin/python3 "$root/tools/peer/optuna_torch_sweep.py" "${peer_args[@]}" > "$logs/optuna.log" 2>&1 \
      || echo "optuna_torch_sweep.py exited with $?" >&2
    tail -n 8 "$logs/optuna.log"
    p_wall=$(sed -n 's/^wall: \([0-9.]*\) s/\1/p' "$logs/optuna.log")
    p_epochs=$(sed -n 's/^epochs: \([0-9]*\) of.*/\1/p' "$logs/optuna.log")
    p_pruned=$(sed -n 's/^pruned: \([0-9]*\).*/\1/p' "$logs/optuna.log")
    p_best=$(sed -n 's/^best: validation_accuracy \([0-9.]*\).*/\1/p' "$logs/optuna.log")
    p_params=$(sed -n 's/^best: .*of trial [0-9]* //p' "$logs/optuna.log")
  else
    echo "skipped: no /usr/bin/python3 (apt-get install python3-optuna python3-torch)"
  fi
fi

echo
printf '%-34s %14s %14s\n' "fashion_mnist_asha, ${trials:-16} trials" "dtrain tune" "optuna+torch"
printf '%-34s %14s %14s\n' "wall time (s)" "${d_wall:--}" "${p_wall:--}"
printf '%-34s %14s %14s\n' "epochs run (of $(( ${trials:-16} * ${epochs:-15} )))" "${d_epochs:--}" "${p_epochs:--}"
printf '%-34s %14s %14s\n' "trials stopped early" "${d_pruned:--}" "${p_pruned:--}"
per_epoch() { awk -v w="$1" -v e="$2" 'BEGIN { if (w + 0 > 0 && e + 0 > 0) printf "%.2f", w / e; else print "-" }'; }
printf '%-34s %14s %14s\n' "wall per epoch run (s)" "$(per_epoch "$d_wall" "$d_epochs")" \
  "$(per_epoch "$p_wall" "$p_epochs")"
printf '%-34s %14s %14s\n' "best validation accuracy" "${d_best:--}" "${p_best:--}"
echo "dtrain best: ${d_params:--}"
echo "optuna best: ${p_params:--}"
echo "(the two draw different trials from the same space: epochs run and the best differ by draw;"
echo " wall per epoch run compares the machinery)"
ratio=$(awk -v a="$d_wall" -v b="$p_wall" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", b / a; else print "-" }')
echo "summary: dtrain tune ${d_wall:--} s, ${d_epochs:--} epochs, best ${d_best:--}; optuna+torch ${p_wall:--} s, ${p_epochs:--} epochs, best ${p_best:--}; peer/dtrain wall ${ratio}"
