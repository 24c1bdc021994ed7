#!/usr/bin/env bash
# Installs the Debian packages one of dtrain's commands needs, and for the
# tests also the browser test's playwright-core (npm, pinned in
# tools/browser/package-lock.json, into tools/browser/node_modules; it
# downloads no browser: the test drives Debian's /usr/bin/chromium).
# Idempotent and quick when all is present: apt runs only for missing
# packages, npm only when the pinned version is absent. Run as root (apt);
# the npm step runs as any user.
#
#   tools/install-deps.sh --for main  what building dtrain and running the main job need
#                                   (tools/main.sh): compiler, CMake and the libraries of
#                                   cmake/dependencies.cmake, and the Fashion-MNIST data set
#   tools/install-deps.sh [--for test]  that and what the test suites use (tools/test.sh;
#                                   the default): promtool, python3, the openssl command,
#                                   and the optional Chromium, Node + playwright-core,
#                                   Slurm and iproute2
#   --peers      also PyTorch (python3-torch) and Optuna 3.1, the peers the benchmarks
#                compare against (~800 MB); with them the launch test's torchrun step runs
#   --libtorch   also libtorch (libtorch-dev 1.13, CPU; ~1 GB with its dependencies), for
#                the libtorch adapter (libtorch/) and its tests; with --for test,
#                DTRAIN_INSTALL_LIBTORCH=1 in the environment does the same (CI sets it, .ci/run)
#   --print      lists each group's packages and what is missing here; installs nothing
#
# A required package that cannot be installed fails the script (the build or
# a test suite would fail without it). An optional one (tests skip without
# it) that cannot be had -- no such package in apt's sources, not root, no
# npm registry -- is skipped with a message naming it and the tests that
# skip or fail for it; the script still succeeds.
set -euo pipefail

# What building dtrain (cmake/dependencies.cmake) and running the main job need.
main_packages=(
  build-essential cmake pkg-config  # pkg-config: CapnProto's CMake config calls it
  libcaf-dev                      # actors and remoting (CAF 0.17.6)
  capnproto libcapnp-dev          # checkpoint and message schemas
  libboost-test-dev               # Boost: the dashboard's HTTP server (headers); Boost.Test,
                                  # which dependencies.cmake requires even for the main job
  libopenblas-dev                 # CPU GEMM
  libgloo-dev                     # CPU collectives between hosts
  zlib1g-dev                      # gzip'd IDX files
  libhdf5-dev                     # HDF5 files (datasets/hdf5.cpp), serial 1.10
  libyaml-cpp-dev                 # experiment files
  libcli11-dev                    # command-line parsing
  libsqlite3-dev                  # the experiment store
  libssl-dev                      # cluster certificates and TLS (libcrypto, libssl)
  dataset-fashion-mnist           # the main job's data set
  libpng-dev                      # image folders: PNG decoding
  libjpeg62-turbo-dev             # image folders: JPEG decoding (libjpeg-turbo)
)
# What the test suites need: without one of these a suite fails.
test_packages=(
  prometheus                      # promtool: the dashboard suite lints /metrics with it
  python3                         # the launch test picks its free ports with it
  openssl                         # the command: the TLS and certificate suites call it
)
# Optional groups for the tests: "name|packages|what happens without them".
test_optional=(
  "chromium|chromium|dashboard_browser skips, and report_command's Chromium case"
  "slurm|slurm-client slurmctld slurmd|launch's real-Slurm step skips; nodelist compares with recorded expansions only"
  "iproute2|iproute2|multi_host skips (no network namespaces)"
)

# Where this script sits; the npm step works in its browser/ folder.
here=$(cd "$(dirname "$0")" && pwd)
mode="test"; peers=0; libtorch=0; print_only=0
required=()   # packages the command cannot do without
optional=()   # "name|packages|what happens without them", for this mode
skipped=()    # "what: why -> effect", reported at the end
apt_updated=""  # "" not yet, "ok" or "failed"

# Sets mode, peers, libtorch and print_only from the command line.
parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --for) [ $# -ge 2 ] || usage_error "--for needs main or test"; set_mode "$2"; shift ;;
      --for=*) set_mode "${1#--for=}" ;;
      --peers) peers=1 ;;
      --libtorch) libtorch=1 ;;
      --print) print_only=1 ;;
      *) usage_error "unknown argument '$1'" ;;
    esac
    shift
  done
  if [ "$mode" = test ] && [ "${DTRAIN_INSTALL_LIBTORCH:-0}" = 1 ]; then libtorch=1; fi
}
set_mode() {
  case "$1" in
    main|test) mode=$1 ;;
    *) usage_error "--for takes main or test, not '$1'" ;;
  esac
}
usage_error() { echo "install-deps.sh: $1 (usage: install-deps.sh [--for main|test] [--peers] [--libtorch] [--print])" >&2; exit 2; }

# Fills `required` and `optional` for the mode and the extras asked for.
# Extras asked for by name (--peers, --libtorch) are required: CI sets
# DTRAIN_INSTALL_LIBTORCH to test the adapter, which must then not skip.
build_groups() {
  required=("${main_packages[@]}")
  if [ "$mode" = test ]; then
    required+=("${test_packages[@]}")
    optional=("${test_optional[@]}")
    # Node and npm: Debian's unless a node is already installed (NodeSource's
    # nodejs bundles npm and conflicts with Debian's npm package).
    local node="" effect="dashboard_browser skips (no node)"
    command -v node > /dev/null || node="nodejs"
    if ! command -v npm > /dev/null; then
      node="$node npm"
      [ "$node" = " npm" ] && effect="no npm, so no playwright-core (see below)"
    fi
    optional+=("node|${node# }|$effect")
  fi
  if [ "$peers" = 1 ]; then required+=(python3-torch python3-numpy python3-optuna); fi
  if [ "$libtorch" = 1 ]; then required+=(libtorch-dev); fi
}

is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# The packages of "$@" that are not installed, one a line.
missing_of() { local p; for p in "$@"; do is_installed "$p" || echo "$p"; done; }
# Whether apt's sources offer package $1.
apt_has() { apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [^(]'; }

# The groups, their packages and what is missing here (--print).
print_groups() {
  echo "install-deps --for $mode$([ "$peers" = 1 ] && echo " --peers")$([ "$libtorch" = 1 ] && echo " --libtorch"):"
  echo "  required (${#required[@]}): ${required[*]}"
  local group name packages effect
  for group in "${optional[@]}"; do
    IFS='|' read -r name packages effect <<< "$group"
    echo "  optional $name: ${packages:-(none: node and npm are on the PATH)}  [without: $effect]"
  done
  [ "$mode" = test ] && echo "  npm: playwright-core $(pinned_playwright) into $here/browser/node_modules" \
    "($(installed_playwright || echo absent) there now)"
  local missing
  # shellcheck disable=SC2046  # one word per package
  missing=$(missing_of "${required[@]}" $(optional_packages) | tr '\n' ' ')
  missing=${missing% }
  echo "  missing here: ${missing:-none}"
}
optional_packages() { local g; for g in "${optional[@]}"; do echo "$g" | cut -d'|' -f2; done; }

# Runs apt-get update once per run; fails if it failed.
apt_update_once() {
  if [ -z "$apt_updated" ]; then
    export DEBIAN_FRONTEND=noninteractive
    if apt-get -o DPkg::Lock::Timeout=600 update -q; then apt_updated=ok; else apt_updated=failed; fi
  fi
  [ "$apt_updated" = ok ]
}
apt_install() {
  apt_update_once || return 1
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@"
}

# Installs the missing required packages; exits 1 when it cannot.
install_required() {
  local missing
  missing=$(missing_of "${required[@]}" | tr '\n' ' ')
  missing=${missing% }
  if [ -z "$missing" ]; then
    echo "install-deps ($mode): all ${#required[@]} required packages present"
  elif [ "$(id -u)" != 0 ]; then
    echo "install-deps ($mode): missing packages ($missing); run this script as root" >&2
    exit 1
  else
    echo "install-deps ($mode): installing $missing"
    # shellcheck disable=SC2086  # one word per package
    apt_install $missing || {
      echo "install-deps ($mode): could not install the required packages $missing (apt's message above)" >&2
      exit 1
    }
  fi
}

# Installs each optional group whose packages are missing, or records why not.
install_optional_groups() {
  local group name packages effect missing p
  for group in "${optional[@]}"; do
    IFS='|' read -r name packages effect <<< "$group"
    # shellcheck disable=SC2086
    missing=$(missing_of $packages | tr '\n' ' ')
    missing=${missing% }
    [ -n "$missing" ] || continue
    if [ "$(id -u)" != 0 ]; then
      skipped+=("$name ($missing): not root, so not installed -> $effect"); continue
    fi
    if ! apt_update_once; then
      skipped+=("$name ($missing): apt-get update failed -> $effect"); continue
    fi
    for p in $missing; do
      apt_has "$p" || { skipped+=("$name ($missing): apt's sources have no package $p -> $effect"); continue 2; }
    done
    echo "install-deps ($mode): installing optional $name: $missing"
    # shellcheck disable=SC2086
    apt_install $missing || skipped+=("$name ($missing): apt-get install failed (its message above) -> $effect")
  done
}

# playwright-core's version in the lock file (1.49.x: it runs on Debian 12's
# Node 18 as well as on newer ones).
pinned_playwright() {
  sed -n '/"node_modules\/playwright-core"/,/}/s/.*"version": "\(.*\)".*/\1/p' \
    "$here/browser/package-lock.json"
}
# The version of playwright-core in tools/browser/node_modules; fails if none.
installed_playwright() {
  local v
  v=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' \
    "$here/browser/node_modules/playwright-core/package.json" 2>/dev/null) && [ -n "$v" ] && echo "$v"
}
# What the dashboard_browser suite does without playwright-core here.
playwright_effect() {
  local chromium=${DTRAIN_CHROMIUM:-/usr/bin/chromium}
  if [ -x "$chromium" ] && command -v node > /dev/null; then
    echo "dashboard_browser FAILS: with node and $chromium present it runs, and it needs playwright-core"
  else
    echo "dashboard_browser skips (no node or no $chromium)"
  fi
}

# playwright-core at the pinned version, with npm ci; or why not.
install_playwright() {
  local browser="$here/browser" pinned installed
  pinned=$(pinned_playwright)
  installed=$(installed_playwright || true)
  if [ -n "$pinned" ] && [ "$installed" = "$pinned" ]; then
    echo "install-deps ($mode): playwright-core $pinned present"
  elif ! command -v npm > /dev/null; then
    skipped+=("playwright-core $pinned: npm is not on the PATH -> $(playwright_effect)")
  else
    echo "install-deps ($mode): installing playwright-core $pinned into $browser/node_modules"
    (cd "$browser" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) ||
      skipped+=("playwright-core $pinned: npm ci failed (npm's message above; is the npm registry reachable?) -> $(playwright_effect)")
  fi
}

# The optional parts that were skipped, each with the tests it affects.
report_skipped() {
  [ ${#skipped[@]} -gt 0 ] || return 0
  echo "install-deps ($mode): not installed, going on without them:" >&2
  local s
  for s in "${skipped[@]}"; do echo "  - $s" >&2; done
}

parse_args "$@"
build_groups
if [ "$print_only" = 1 ]; then print_groups; exit 0; fi
install_required
install_optional_groups
if [ "$mode" = test ]; then install_playwright; fi
report_skipped
