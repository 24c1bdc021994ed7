#!/usr/bin/env bash
# Installs the dependencies (when run as root) and builds dtrain into
# build/ (or $DTRAIN_BUILD_DIR). CUDA is built when /usr/local/cuda has nvcc.
# The arguments go to tools/install-deps.sh: `--for main` (tools/main.sh)
# installs what the main job needs and builds only the dtrain program;
# otherwise (`--for test`, the default) the test suites' packages are
# installed too and everything is built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DTRAIN_BUILD_DIR:-$root/build}
targets=()   # all of them
prev=""
for arg in "$@"; do
  if [ "$arg" = --for=main ] || { [ "$prev" = --for ] && [ "$arg" = main ]; }; then
    targets=(--target dtrain)
  fi
  prev=$arg
done
"$root/tools/install-deps.sh" "$@"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
grep -E "^-- dtrain:" "$build/configure.log" || true
cmake --build "$build" -j2 "${targets[@]}"
