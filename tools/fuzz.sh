#!/usr/bin/env bash
# Builds and runs dtrain's libFuzzer harnesses (fuzz/, fuzz/README.md) with
# clang's address and undefined-behaviour sanitizers, one harness at a time.
#
#   tools/fuzz.sh smoke [SECONDS] [HARNESS...]  every kept regression input, then a few
#                                              seconds (default 5) of fuzzing each
#   tools/fuzz.sh long [SECONDS] [HARNESS...]   the regressions, then SECONDS (default
#                                              600) of fuzzing each
#   tools/fuzz.sh build                        only the build
#
# Each run prints, per harness, the executions, executions per second and
# coverage (libFuzzer's cov: edges, ft: features, from its final line), and
# any crash, leak, timeout (10 s per input) or memory blow-up (2 GB), whose
# input libFuzzer writes to $BUILD/artifacts/HARNESS/. The corpus each run
# grows stays in $BUILD/work/HARNESS (the next run starts from it); the seeds
# are fuzz/corpus/HARNESS, read only. Exit status 1 when any harness failed.
#
# Environment: DTRAIN_FUZZ_BUILD (default build-fuzz), DTRAIN_FUZZ_JOBS (build
# jobs, default 2), DTRAIN_FUZZ_NICE (default 10), CXX/CC (default clang++/clang).
# Installs clang and libFuzzer from Debian's packages when missing and run as
# root (clang, libfuzzer-14-dev, libclang-rt-14-dev), as tools/install-deps.sh.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-smoke}"
[ $# -gt 0 ] && shift
case "$mode" in
  smoke) seconds=5 ;;
  long) seconds=600 ;;
  build) seconds=0 ;;
  *) echo "fuzz.sh: unknown mode '$mode' (smoke, long or build)" >&2; exit 2 ;;
esac
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
build="${DTRAIN_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${DTRAIN_FUZZ_JOBS:-2}"
niceness="${DTRAIN_FUZZ_NICE:-10}"
cxx="${CXX:-clang++}"
cc="${CC:-clang}"

all=()
for f in "$root"/fuzz/*.cpp; do all+=("$(basename "$f" .cpp)"); done
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")
for h in "${harnesses[@]}"; do
  [ -f "$root/fuzz/$h.cpp" ] || { echo "fuzz.sh: no harness '$h' (${all[*]})" >&2; exit 2; }
done

# clang with libFuzzer and the sanitizer runtimes.
packages=(clang libfuzzer-14-dev libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" != 0 ]; then
  # Another clang with libFuzzer may do (CXX=...); the build says if not.
  echo "fuzz.sh: missing packages (${missing[*]}): run as root to install them" >&2
elif [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi

mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
    > "$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
nice -n "$niceness" cmake --build "$build" -j "$jobs" --target "${targets[@]}" > "$build/build.log" 2>&1 \
  || { tail -40 "$build/build.log" >&2; exit 1; }
echo "fuzz.sh: built ${#harnesses[@]} harnesses in $build/bin"
[ "$mode" = build ] && exit 0

# Inputs larger than the seeds: the store's are SQLite files.
max_len() {
  case "$1" in
    store_open) echo 65536 ;;
    *) echo 8192 ;;
  esac
}

failed=0
summary="$build/fuzz-summary.txt"
printf '%-20s %7s %12s %8s %6s %7s  %s\n' harness seconds executions exec/s cov ft result \
  | tee "$summary"
for h in "${harnesses[@]}"; do
  bin="$build/bin/fuzz_$h"
  log="$build/logs/$h.log"
  mkdir -p "$build/logs" "$build/work/$h" "$build/artifacts/$h"
  result=ok
  # Every kept regression input, once each.
  regressions=("$root/fuzz/regressions/$h"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! nice -n "$niceness" "$bin" -rss_limit_mb=2048 -timeout=10 "${regressions[@]}" \
         > "$build/logs/$h.regressions.log" 2>&1; then
      result="REGRESSION FAILED (see $build/logs/$h.regressions.log)"
      failed=1
    fi
  fi
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len="$(max_len "$h")"
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$h/")
  [ -f "$root/fuzz/$h.dict" ] && args+=(-dict="$root/fuzz/$h.dict")
  start=$(date +%s)
  if ! nice -n "$niceness" "$bin" "${args[@]}" "$build/work/$h" "$root/fuzz/corpus/$h" \
       > "$log" 2>&1; then
    result="FAILED: $(grep -m1 -E 'ERROR|SUMMARY' "$log" || echo "exit status") (log $log)"
    failed=1
  fi
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  printf '%-20s %7s %12s %8s %6s %7s  %s\n' "$h" "$elapsed" "${execs:--}" "${rate:--}" \
    "${cov:--}" "${ft:--}" "$result" | tee -a "$summary"
done
exit $failed
