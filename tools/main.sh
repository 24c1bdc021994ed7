#!/usr/bin/env bash
# The main job: installs what it needs (tools/install-deps.sh --for main:
# no test-suite extras), builds the dtrain program, and runs the shipped
# Fashion-MNIST experiment (MLP 784-256-128-100-10, 15 epochs) data-parallel
# on two replicas of an embedded local cluster, printing per-epoch loss,
# accuracy, time and throughput, and the final validation accuracy. Extra
# arguments go to `dtrain train` (e.g. --address HOST:PORT to use a running
# cluster).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/build.sh" --for main
exec "${DTRAIN_BUILD_DIR:-$root/build}/bin/dtrain" train "$root/experiments/fashion_mnist.yaml" "$@"
