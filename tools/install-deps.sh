#!/usr/bin/env bash
# Installs every Debian package dtrain needs to build, test and run, and the
# browser test's playwright-core (npm, pinned in tools/browser/package-lock.json,
# into tools/browser/node_modules; it downloads no browser: the test drives
# Debian's /usr/bin/chromium). Idempotent and quick when all is present: apt
# runs only for missing packages, npm only when the pinned version is absent.
# Run as root (apt); the npm step runs as any user.
#
#   tools/install-deps.sh           build + test + run dependencies
#   tools/install-deps.sh --peers   also PyTorch (python3-torch) and Optuna 3.1, the peers the
#                                   benchmarks compare against (~800 MB)
#   tools/install-deps.sh --libtorch  also libtorch (libtorch-dev 1.13, CPU; ~1 GB with its
#                                   dependencies), for the libtorch adapter (libtorch/) and its
#                                   tests; DTRAIN_INSTALL_LIBTORCH=1 in the environment does the
#                                   same (CI sets it, .ci/run)
set -euo pipefail

packages=(
  build-essential cmake pkg-config  # pkg-config: CapnProto's CMake config calls it
  libcaf-dev                      # actors and remoting (CAF 0.17.6)
  capnproto libcapnp-dev          # checkpoint and message schemas
  libboost-test-dev               # unit and integration tests
  libopenblas-dev                 # CPU GEMM
  libgloo-dev                     # CPU collectives between hosts
  zlib1g-dev                      # gzip'd IDX files
  libyaml-cpp-dev                 # experiment files
  libcli11-dev                    # command-line parsing
  libsqlite3-dev                  # the experiment store
  libssl-dev openssl              # cluster certificates (libcrypto); the CLI in their tests
  dataset-fashion-mnist           # the real data set
  prometheus                      # promtool: the dashboard's /metrics test lints with it
  chromium                        # the dashboard's browser test (tests/browser)
  slurm-client slurmctld slurmd   # scontrol and srun; `dtrain launch`'s test runs a one-host Slurm
)
# Node and npm for that test: Debian's unless a node is already installed
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm package).
command -v node > /dev/null || packages+=(nodejs)
command -v npm > /dev/null || packages+=(npm)
if [ "${DTRAIN_INSTALL_LIBTORCH:-0}" = 1 ]; then packages+=(libtorch-dev); fi
for arg in "$@"; do
  case "$arg" in
    --peers) packages+=(python3-torch python3-numpy python3-optuna) ;;
    --libtorch) packages+=(libtorch-dev) ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
elif [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
  exit 1
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi

# playwright-core at the version the lock file pins (1.49.x: it runs on
# Debian 12's Node 18 as well as on newer ones).
browser="$(cd "$(dirname "$0")" && pwd)/browser"
pinned=$(sed -n '/"node_modules\/playwright-core"/,/}/s/.*"version": "\(.*\)".*/\1/p' \
  "$browser/package-lock.json")
installed=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' \
  "$browser/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [ -n "$pinned" ] && [ "$installed" = "$pinned" ]; then
  echo "install-deps: playwright-core $pinned present"
else
  echo "install-deps: installing playwright-core $pinned into $browser/node_modules"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error)
fi
