#!/usr/bin/env bash
# Installs the dependencies (when run as root) and builds dtrain into
# build/ (or $DTRAIN_BUILD_DIR). CUDA is built when /usr/local/cuda has nvcc.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DTRAIN_BUILD_DIR:-$root/build}
"$root/tools/install-deps.sh" "$@"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
grep -E "^-- dtrain:" "$build/configure.log" || true
cmake --build "$build" -j2
