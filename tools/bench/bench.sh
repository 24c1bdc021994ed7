#!/usr/bin/env bash
# Benchmarks against the PyTorch peer (installs Debian's python3-torch):
#   tools/bench/bench.sh            step, cnn-step, allreduce and trainer
#   tools/bench/bench.sh step       MLP training step
#   tools/bench/bench.sh cnn-step   CNN training step (2 convs, 28x28, batch 128), 1 and 2 threads
#   tools/bench/bench.sh allreduce  all_reduce per backend
#   tools/bench/bench.sh trainer    data-parallel trainer, no-op step, startup
#   tools/bench/bench.sh checkpoint 1 GiB save/restore against the raw disk
#   tools/bench/bench.sh tune       the tuner's own cost, Optuna's per trial for reference
#   tools/bench/bench.sh store      the experiment store: results/s written, curve reads
#   tools/bench/bench.sh tune-peer  the Fashion-MNIST ASHA sweep: dtrain tune against Optuna +
#                             PyTorch on the same space (about 4 minutes here)
#   tools/bench/bench.sh tpe        the TPE searcher against Optuna 3.1's TPESampler on Branin,
#                             Hartmann-6 and a noisy Branin, 20 seeds x 50 trials (under a minute)
#   tools/bench/bench.sh tpe-liar   multivariate TPE and the constant liar against Optuna 3.1:
#                             10-D Rosenbrock and Sphere, 4 trials at a time on four functions,
#                             100 seeds x 100 trials (about an hour, most of it Optuna's)
#   tools/bench/bench.sh pbt        PBT against random search on Fashion-MNIST's learning rate,
#                             3 seeds (about 4 minutes here)
#   tools/bench/bench.sh tls        plain remoting against mutual TLS: latency, 64 MiB throughput,
#                             driver connect to first step (under a minute)
#   tools/bench/bench.sh dashboard  training throughput with and without the dashboard polled
#                             as the page does, same run, interleaved (about 2 minutes)
#   tools/bench/bench.sh libtorch   a libtorch MLP through dtrain's adapter at N = 1, 2 against
#                             plain libtorch and PyTorch DDP; bucket launch times during
#                             backward (installs libtorch-dev too; about 2 minutes)
#   tools/bench/bench.sh scale      the control plane at scale (docs/scale.md): 32-128 node
#                             processes, 500-2,000 in-process nodes (about 3 minutes); add
#                             --sweep for 2,000 trials over 64 nodes (about 40 s more)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DTRAIN_BUILD_DIR:-$root/build}/bin
what=${1:-all}
if [ "$what" = libtorch ]; then "$root/tools/build.sh" --peers --libtorch; else "$root/tools/build.sh" --peers; fi
[ $# -gt 0 ] && shift
case "$what" in
  step) "$bin/dtrain-bench-step" "$@" ;;
  cnn-step) "$bin/dtrain-bench-cnn-step" "$@" ;;
  allreduce) "$bin/dtrain-bench-allreduce" "$@" ;;
  trainer) "$bin/dtrain-bench-trainer" "$@" ;;
  checkpoint) "$bin/dtrain-bench-checkpoint" "$@" ;;
  tune) "$bin/dtrain-bench-tune" "$@" ;;
  store) "$bin/dtrain-bench-store" "$@" ;;
  tune-peer) "$root/tools/bench/bench_tune_peer.sh" "$@" ;;
  tpe) "$bin/dtrain-bench-tpe" "$@" ;;
  tpe-liar) "$bin/dtrain-bench-tpe-liar" "$@" ;;
  scale) "$bin/dtrain-bench-scale" "$@" ;;
  pbt) "$root/tools/bench/bench_pbt.sh" "$@" ;;
  tls) "$bin/dtrain-bench-tls" "$@" ;;
  libtorch) "$bin/dtrain-bench-libtorch" "$@" ;;
  dashboard) python3 "$root/tools/bench/bench_dashboard.py" "$bin/dtrain" "$@" ;;
  all) "$bin/dtrain-bench-step"; "$bin/dtrain-bench-cnn-step"; "$bin/dtrain-bench-allreduce"; "$bin/dtrain-bench-trainer" ;;
  *) echo "bench.sh: unknown benchmark '$what' (step, cnn-step, allreduce, trainer, checkpoint, tune, store, tune-peer, tpe, tpe-liar, scale, pbt, tls, dashboard, libtorch, all)" >&2; exit 2 ;;
esac
