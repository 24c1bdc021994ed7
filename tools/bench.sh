#!/usr/bin/env bash
# Benchmarks against the PyTorch peer (installs Debian's python3-torch):
#   tools/bench.sh            both benchmarks
#   tools/bench.sh step       MLP training step
#   tools/bench.sh allreduce  all_reduce per backend
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${DTRAIN_BUILD_DIR:-$root/build}/bin
"$root/tools/build.sh" --peers
what=${1:-all}
[ $# -gt 0 ] && shift
case "$what" in
  step) "$bin/dtrain-bench-step" "$@" ;;
  allreduce) "$bin/dtrain-bench-allreduce" "$@" ;;
  all) "$bin/dtrain-bench-step"; "$bin/dtrain-bench-allreduce" ;;
  *) echo "bench.sh: unknown benchmark '$what' (step, allreduce, all)" >&2; exit 2 ;;
esac
