#!/usr/bin/env bash
# Benchmarks against the PyTorch peer (installs Debian's python3-torch).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/build.sh" --peers
"${DTRAIN_BUILD_DIR:-$root/build}/bin/dtrain-bench-step" "$@"
