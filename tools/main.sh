#!/usr/bin/env bash
# The main job: installs, builds, and trains the Fashion-MNIST MLP
# (784-256-128-100-10), printing per-epoch loss, accuracy and time and the
# final test accuracy. Extra arguments go to dtrain-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/build.sh"
exec "${DTRAIN_BUILD_DIR:-$root/build}/bin/dtrain-fashion-mnist" "$@"
