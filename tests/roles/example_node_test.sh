#!/bin/bash
# A user's own node program (apps/examples/my_node.cpp, which calls
# roles::run_node) joins a head started by `dtrain start --head`: `dtrain
# status` lists it, and `dtrain stop` stops both through the pid files
# they recorded (the node's names its own program, not dtrain).
#
#   example_node_test.sh BUILD_DIR
set -uo pipefail
bin=$(cd "$1" && pwd)/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-example-node-test.XXXXXX")
export DTRAIN_HOME=$tmp/home
unset DTRAIN_ADDRESS
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
wait_for() {  # FILE PATTERN SECONDS
  for _ in $(seq $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

"$bin/dtrain" start --head --port 0 --port-file "$tmp/head.address" > "$tmp/head.log" 2>&1 &
pids+=($!)
head_pid=$!
wait_for "$tmp/head.address" : 20 || { cat "$tmp/head.log"; fail "the head did not start"; exit 1; }
address=$(cat "$tmp/head.address")

"$bin/dtrain-example-node" "$address" 3 > "$tmp/node.log" 2>&1 &
pids+=($!)
node_pid=$!
wait_for "$tmp/node.log" "joined $address" 20 || { cat "$tmp/node.log"; fail "the node did not join"; exit 1; }
cat "$tmp/node.log"

timeout 60 "$bin/dtrain" status > "$tmp/status.log" 2>&1 || fail "status: $(cat "$tmp/status.log")"
cat "$tmp/status.log"
grep -q "cluster at $address: 1 nodes" "$tmp/status.log" || fail "status does not list one node"
grep -q "pid $node_pid " "$tmp/status.log" || fail "status does not list the example's pid $node_pid"
grep -q "slots 0/3 in use" "$tmp/status.log" || fail "the node does not offer its 3 slots"

"$bin/dtrain-example-node" "$address" many > "$tmp/bad.log" 2>&1 && fail "SLOTS 'many' was accepted"
grep -q "SLOTS: 'many'" "$tmp/bad.log" || fail "bad SLOTS: $(cat "$tmp/bad.log")"

timeout 60 "$bin/dtrain" stop --grace-ms 5000 > "$tmp/stop.log" 2>&1 || fail "stop: $(cat "$tmp/stop.log")"
cat "$tmp/stop.log"
grep -q "stopped 2 dtrain processes" "$tmp/stop.log" || fail "stop did not stop the head and the node"
for p in "$head_pid" "$node_pid"; do
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && fail "process $p still runs after dtrain stop"
done
grep -q "dtrain node: stopping" "$tmp/node.log" || fail "the node did not stop cleanly: $(cat "$tmp/node.log")"
[ "$failed" = 0 ] && echo "example_node: all checks passed"
exit "$failed"
