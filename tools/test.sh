#!/usr/bin/env bash
# The test command: installs what the suites need (tools/install-deps.sh
# --for test: the main job's packages, then promtool, python3 and the openssl
# command, which suites fail without, and Chromium, Node + playwright-core,
# Slurm and iproute2, which suites skip without: any of those that cannot be
# had is named, with the suites it affects, and the tests run anyway), builds
# everything, and runs every CTest suite (unit, integration, gpu; the gpu
# suites skip themselves, saying so, without a device). Extra arguments go to
# ctest, e.g. -L unit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DTRAIN_BUILD_DIR:-$root/build}
"$root/tools/build.sh" --for test
cd "$build"
ctest --output-on-failure --timeout 900 "$@"
