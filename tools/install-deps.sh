#!/usr/bin/env bash
# Installs every Debian package dtrain needs to build, test and run.
# Idempotent: packages already present are left alone. Run as root.
#
#   tools/install-deps.sh           build + test + run dependencies
#   tools/install-deps.sh --peers   also PyTorch (python3-torch) and Optuna 3.1, the peers the
#                                   benchmarks compare against (~800 MB)
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
)
for arg in "$@"; do
  case "$arg" in
    --peers) packages+=(python3-torch python3-numpy python3-optuna) ;;
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
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -q
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
