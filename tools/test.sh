#!/usr/bin/env bash
# The test command: installs, builds, and runs every CTest suite (unit,
# integration, gpu; the gpu suites skip themselves, saying so, without a
# device). Extra arguments go to ctest, e.g. -L unit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DTRAIN_BUILD_DIR:-$root/build}
"$root/tools/build.sh"
cd "$build"
ctest --output-on-failure --timeout 900 "$@"
