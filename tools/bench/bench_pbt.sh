#!/usr/bin/env bash
# PBT against random search on Fashion-MNIST (the learning rate only): the
# shipped experiments/fashion_mnist_pbt.yaml (a population of 4, constant
# rates from 10^U(-4, -2), 8 epochs, exploits every 2) and the same file with
# `scheduler: fifo` (the same 4 random rates, trained through), for several
# seeds. Prints each run's best final validation accuracy (the best trial's
# last epoch) and the medians. Usage: tools/bench/bench_pbt.sh [SEEDS...] (default 1 2 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${DTRAIN_BUILD_DIR:-$root/build}/bin
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DTRAIN_HOME="$work/home"
final() {  # the best last-epoch accuracy of experiment $1
  "$bin/dtrain" experiments trials "$1" --json |
    python3 -c 'import json,sys; print(max(t["last"] for t in json.load(sys.stdin) if t["last"] is not None))'
}
printf "%-6s %-10s %-10s\n" seed random pbt
rs=(); ps=()
for seed in "${seeds[@]}"; do
  for scheduler in fifo pbt; do
    f="$work/$scheduler-$seed.yaml"
    sed -e "s/^seed: .*/seed: $seed/" -e "s|host_path: .*|host_path: $work/ckpt|" \
        "$root/experiments/fashion_mnist_pbt.yaml" > "$f"
    if [ "$scheduler" = fifo ]; then
      sed -i -e 's/^  scheduler: pbt/  scheduler: fifo/' -e '/perturbation_interval\|quantile_fraction\|resample_probability/d' "$f"
    fi
    out=$("$bin/dtrain" tune "$f" --local-slots 4 --verbosity 0)
    id=$(printf "%s\n" "$out" | sed -n 's/^experiment \([0-9]*\).*/\1/p' | head -1)
    value=$(final "$id")
    if [ "$scheduler" = fifo ]; then r=$value; rs+=("$value"); else p=$value; ps+=("$value"); fi
  done
  printf "%-6s %-10.4f %-10.4f\n" "$seed" "$r" "$p"
done
median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf "%-6s %-10.4f %-10.4f\n" median "$(median "${rs[@]}")" "$(median "${ps[@]}")"
