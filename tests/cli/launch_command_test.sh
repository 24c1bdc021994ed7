#!/bin/bash
# `dtrain launch` under the launchers' environments, with real processes on
# loopback:
#  0. a real single-host Slurm (Debian's slurmctld and slurmd, started by
#     this test with a configuration of its own in a temporary directory,
#     auth/none: no munge key needed): `srun -N1 -n2 dtrain launch` trains
#     the shipped experiments/fashion_mnist.yaml (its checkpoints, as in
#     every step, under the test's own temporary root) (skipped, saying why, when
#     not root or Slurm is not installed);
#  1. two tasks with Slurm's variables (as srun sets them for `srun -n2` on
#     this host) train experiments/linear_regression.yaml: rank 0 holds the
#     head, both hold a node, both exit 0 when the driver does;
#  2. torchrun --standalone --no_python --nproc_per_node 2 trains the
#     shipped experiment (skipped, saying so, without Debian's torchrun);
#  3. a driver program gets the head in $DTRAIN_ADDRESS;
#  4. a partial allocation (rank 1 never starts) fails within the join
#     timeout naming the host whose task is missing;
#  5. a malformed variable is an error naming it;
#  6. a task killed with SIGKILL mid-training ends the job: its node goes
#     with it, rank 0 notices, stops the driver and fails;
#  7. under a stock Debian /etc/hosts (the host name at 127.0.1.1, bound
#     over /etc/hosts in a private mount namespace): one host's head is at
#     127.0.0.1; a job over two hosts refuses a loopback head on the other
#     host and gives the head's own host an address off loopback;
# and after each, nothing of it is left running (`dtrain stop` finds none).
#
#   launch_command_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
dtrain=$(cd "$1" && pwd)/bin/dtrain
source=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-launch-test.XXXXXX")
export DTRAIN_HOME=$tmp/home
unset DTRAIN_ADDRESS DTRAIN_PORT DTRAIN_HEAD_ADDR
# A test run inside a launcher's job must not read that job's variables.
for v in $(env | grep -oE '^(SLURM_[A-Z_]*|TORCHELASTIC_[A-Z_]*|RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|GROUP_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)='); do
  unset "${v%=}"
done
pids=()
cleanup() {
  # Jobs first (slurmstepd is not slurmd's child), then the daemons.
  if [ -n "${SLURM_CONF:-}" ]; then scancel --full --quiet --user="$(id -un)" 2> /dev/null; sleep 1; fi
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  for d in slurmctld slurmd; do
    [ -f "$tmp/slurm/$d.pid" ] && kill -9 "$(cat "$tmp/slurm/$d.pid")" 2> /dev/null
  done
  "$dtrain" stop > /dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
step() { echo "-- $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
nothing_left() {
  local left
  left=$("$dtrain" stop --grace-ms 1000 2>&1 | sed -n 's/^stopped \([0-9]*\).*/\1/p')
  [ "$left" = 0 ] || fail "$1: $left dtrain processes were left running"
}
host=$(hostname)
experiment=$source/experiments/linear_regression.yaml
# The shipped Fashion-MNIST experiment with a checkpoint root of the
# test's own: never the user's /tmp/dtrain-checkpoints/fashion-mnist.
fm=$tmp/fashion_mnist.yaml
sed -e "s|host_path: .*|host_path: $tmp/ckpt|" "$source/experiments/fashion_mnist.yaml" > "$fm"
grep -q "host_path: $tmp/ckpt" "$fm" || { echo "FAIL: no host_path to replace in $fm" >&2; exit 1; }

step "0. srun -N1 -n2 dtrain launch on a real single-host Slurm"
if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED (real Slurm): not root (slurmd runs jobs as their users)"
elif ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null || ! command -v srun > /dev/null; then
  echo "SKIPPED (real Slurm): slurmctld, slurmd or srun is not installed (tools/install-deps.sh installs them)"
else
  s=$tmp/slurm
  mkdir -p "$s/state" "$s/spool"
  cat > "$s/slurm.conf" <<CONF
ClusterName=dtraintest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=dtraintest Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$s/slurm.conf
  slurmctld -D -f "$SLURM_CONF" > "$s/slurmctld.out" 2>&1 &
  pids+=($!)
  slurmd -D -f "$SLURM_CONF" > "$s/slurmd.out" 2>&1 &
  pids+=($!)
  ready=0
  for _ in $(seq 1 100); do
    sinfo -h -o %t 2> /dev/null | grep -q idle && { ready=1; break; }
    sleep 0.2
  done
  if [ "$ready" != 1 ]; then
    echo "SKIPPED (real Slurm): slurmctld and slurmd did not come up in this environment:"
    tail -5 "$s/slurmctld.out" "$s/slurmd.out" "$s/slurmctld.log" "$s/slurmd.log" 2> /dev/null
  else
    # A port of the test's own: a fresh slurmctld numbers jobs from 1.
    DTRAIN_PORT=$(free_port) timeout 240 srun -N1 -n2 --kill-on-bad-exit=1 "$dtrain" launch \
      "$fm" > "$tmp/srun.log" 2>&1
    rc=$?
    grep -q "hosts $host (SLURM_STEP_NODELIST)" "$tmp/srun.log" || fail "srun: not Slurm's step nodelist"
    grep -q "all 2 tasks joined" "$tmp/srun.log" || fail "srun: the tasks did not all join"
    grep -q "epoch 15/15" "$tmp/srun.log" || fail "srun: no 15th epoch"
    grep -q "experiment [0-9]* completed" "$tmp/srun.log" || fail "srun: the experiment did not complete"
    [ "$rc" = 0 ] || { tail -30 "$tmp/srun.log"; fail "srun: exit code $rc"; }
    grep -E "^validation:" "$tmp/srun.log"
    nothing_left "srun"
  fi
  kill "$(cat "$s/slurmctld.pid" 2> /dev/null)" "$(cat "$s/slurmd.pid" 2> /dev/null)" 2> /dev/null
  unset SLURM_CONF
fi

slurm_env() {  # RANK NTASKS PORT [NODELIST]
  echo "SLURM_PROCID=$1 SLURM_LOCALID=$1 SLURM_NODEID=0 SLURM_NTASKS=$2 SLURM_JOB_NUM_NODES=1" \
       "SLURM_JOB_NODELIST=${4:-$host} SLURM_TASKS_PER_NODE=$2 SLURM_JOB_ID=77 DTRAIN_PORT=$3"
}

step "1. two tasks under Slurm's variables train $experiment"
port=$(free_port)
env $(slurm_env 1 2 "$port") timeout 120 "$dtrain" launch "$experiment" > "$tmp/s1.log" 2>&1 &
pids+=($!); rank1=$!
env $(slurm_env 0 2 "$port") timeout 120 "$dtrain" launch "$experiment" > "$tmp/s0.log" 2>&1
rc0=$?
wait "$rank1"; rc1=$?
grep -q "all 2 tasks joined" "$tmp/s0.log" || fail "slurm: the tasks did not all join"
grep -q "experiment [0-9]* completed" "$tmp/s0.log" || fail "slurm: the experiment did not complete"
grep -q "epoch 8/8" "$tmp/s0.log" || fail "slurm: no 8th epoch"
grep -q "hosts $host (SLURM_JOB_NODELIST)" "$tmp/s0.log" || fail "slurm: the source table lacks the nodelist"
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || { cat "$tmp/s0.log" "$tmp/s1.log"; fail "slurm: exit codes $rc0 and $rc1"; }
nothing_left "slurm"

step "2. torchrun --standalone --no_python --nproc_per_node 2 dtrain launch"
if command -v torchrun > /dev/null; then
  # --redirects/--tee 1: Debian's torchrun 1.13 on Python 3.11 fails to
  # parse its default "0" (an IntFlag lookup that 3.11 changed).
  timeout 240 torchrun --standalone --no_python --redirects 1 --tee 1 --log_dir "$tmp/torchrun" \
    --nproc_per_node 2 "$dtrain" launch "$fm" > "$tmp/t.log" 2>&1
  rc=$?
  grep -q "all 2 tasks joined" "$tmp/t.log" || fail "torchrun: the tasks did not all join"
  grep -q "experiment [0-9]* completed" "$tmp/t.log" || fail "torchrun: the experiment did not complete"
  grep -q "epoch 15/15" "$tmp/t.log" || fail "torchrun: no 15th epoch"
  grep -E "validation:" "$tmp/t.log"
  grep -q "head port [0-9]* (MASTER_PORT + 1)" "$tmp/t.log" || fail "torchrun: head port not beside MASTER_PORT"
  [ "$rc" = 0 ] || { tail -30 "$tmp/t.log"; fail "torchrun: exit code $rc"; }
  nothing_left "torchrun"
else
  echo "SKIPPED: torchrun is not installed (Debian's python3-torch ships it)"
fi

step "3. a driver program finds the head in \$DTRAIN_ADDRESS"
port=$(free_port)
env $(slurm_env 0 1 "$port") timeout 60 "$dtrain" launch -- sh -c 'echo "$DTRAIN_ADDRESS" > "$0"' \
  "$tmp/address" > "$tmp/p.log" 2>&1
rc=$?
[ "$rc" = 0 ] || { cat "$tmp/p.log"; fail "program: exit code $rc"; }
[ "$(cat "$tmp/address" 2> /dev/null)" = "127.0.0.1:$port" ] ||
  fail "program: DTRAIN_ADDRESS was '$(cat "$tmp/address" 2> /dev/null)', not 127.0.0.1:$port"
nothing_left "program"

step "4. a task that never joins: rank 0 gives up naming its host"
port=$(free_port)
start=$(date +%s)
env $(slurm_env 0 2 "$port") timeout 60 "$dtrain" launch --join-timeout 4 "$experiment" \
  > "$tmp/partial.log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" != 0 ] || fail "partial: rank 0 succeeded alone"
grep -q "only 1 of 2 tasks joined the head within 4 s; missing: $host (1 of 2 tasks)" "$tmp/partial.log" ||
  { cat "$tmp/partial.log"; fail "partial: the error does not name the missing task's host"; }
[ "$took" -lt 20 ] || fail "partial: took $took s"
nothing_left "partial"

step "5. a malformed nodelist is an error naming the variable"
env $(slurm_env 0 2 "$(free_port)" "$host[1-") "$dtrain" launch "$experiment" > "$tmp/bad.log" 2>&1
grep -q "SLURM_JOB_NODELIST: host list '$host\[1-'" "$tmp/bad.log" ||
  { cat "$tmp/bad.log"; fail "malformed: the error does not name SLURM_JOB_NODELIST"; }
env -u SLURM_PROCID "$dtrain" launch "$experiment" > "$tmp/none.log" 2>&1
grep -q "no launcher" "$tmp/none.log" || fail "no launcher: $(cat "$tmp/none.log")"
nothing_left "malformed"

step "6. a task killed (-9) mid-training ends the job: rank 0 stops the driver"
port=$(free_port)
env $(slurm_env 1 2 "$port") timeout 120 "$dtrain" launch "$fm" > "$tmp/k1.log" 2>&1 &
pids+=($!); rank1=$!
env $(slurm_env 0 2 "$port") timeout 120 "$dtrain" launch "$fm" > "$tmp/k0.log" 2>&1 &
pids+=($!); rank0=$!
for _ in $(seq 1 300); do grep -q "epoch 1/15" "$tmp/k0.log" 2> /dev/null && break; sleep 0.2; done
grep -q "epoch 1/15" "$tmp/k0.log" || fail "kill: training never started"
kill -9 $(pgrep -P "$rank1") "$rank1"  # the launch itself, under timeout
start=$(date +%s)
wait "$rank0"; rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" != 0 ] || fail "kill: rank 0 exited 0 after rank 1 was killed"
grep -q "a task's node left the cluster" "$tmp/k0.log" ||
  { tail -20 "$tmp/k0.log"; fail "kill: rank 0 did not say a task's node left"; }
[ "$took" -lt 30 ] || fail "kill: rank 0 took $took s to end"
nothing_left "kill"

step "7. a stock Debian /etc/hosts: the host's own name at 127.0.1.1"
# A private mount namespace with such a hosts file bound over /etc/hosts
# (Debian's installer writes "127.0.1.1 HOSTNAME"); dtrain-peer stands for
# a second host of the job, at a documentation address (TEST-NET-2).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n198.51.100.7\tdtrain-peer\n' "$host" > "$tmp/hosts"
stock=(unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$tmp/hosts")
if [ "$(id -u)" != 0 ] || ! command -v unshare > /dev/null; then
  echo "SKIPPED (stock hosts): needs root and unshare to bind a hosts file over /etc/hosts"
elif ! "${stock[@]}" getent ahostsv4 "$host" 2> /dev/null | head -1 | grep -q '^127\.0\.1\.1 '; then
  echo "SKIPPED (stock hosts): a private /etc/hosts could not be bound here"
else
  # One host: the head at 127.0.0.1, as with any other hosts file.
  port=$(free_port)
  env $(slurm_env 0 1 "$port") "${stock[@]}" timeout 60 "$dtrain" launch -- \
    sh -c 'echo "$DTRAIN_ADDRESS" > "$0"' "$tmp/address7" > "$tmp/stock1.log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || { cat "$tmp/stock1.log"; fail "stock hosts: exit code $rc"; }
  [ "$(cat "$tmp/address7" 2> /dev/null)" = "127.0.0.1:$port" ] ||
    fail "stock hosts: DTRAIN_ADDRESS was '$(cat "$tmp/address7" 2> /dev/null)', not 127.0.0.1:$port"
  nothing_left "stock hosts, one host"
  two_hosts() {  # RANK PORT: a task of a job over $host and dtrain-peer
    echo "SLURM_PROCID=$1 SLURM_LOCALID=0 SLURM_NODEID=$1 SLURM_NTASKS=2 SLURM_JOB_NUM_NODES=2" \
         "SLURM_JOB_NODELIST=$host,dtrain-peer SLURM_TASKS_PER_NODE=1(x2) SLURM_JOB_ID=77 DTRAIN_PORT=$2"
  }
  # The other host's task: the head's name resolves to its own loopback.
  port=$(free_port)
  env $(two_hosts 1 "$port") "${stock[@]}" timeout 60 "$dtrain" launch --join-timeout 3 \
    "$experiment" > "$tmp/stock2.log" 2>&1
  rc=$?
  [ "$rc" != 0 ] || fail "stock hosts: a task on another host accepted a loopback head"
  grep -q "the head's host $host resolves to 127.0.1.1 (loopback) here, on node 1 of a job over 2 hosts" \
    "$tmp/stock2.log" || { cat "$tmp/stock2.log"; fail "stock hosts: no refusal of a loopback head"; }
  nothing_left "stock hosts, other host"
  # The head's task: the interface towards dtrain-peer (or any off
  # loopback), never 127.0.1.1; or, on a host without one, a refusal.
  port=$(free_port)
  env $(two_hosts 0 "$port") "${stock[@]}" timeout 60 "$dtrain" launch --join-timeout 3 \
    "$experiment" > "$tmp/stock3.log" 2>&1
  head_at=$(sed -n 's/.*; head at \(.*\):[0-9]*$/\1/p' "$tmp/stock3.log")
  if [ -n "$head_at" ]; then
    case "$head_at" in
      127.*) fail "stock hosts: the head of a job over 2 hosts is at loopback $head_at" ;;
      *) echo "head of a 2-host job at $head_at" ;;
    esac
  else
    grep -q "this host has no other address" "$tmp/stock3.log" ||
      { cat "$tmp/stock3.log"; fail "stock hosts: the head task neither chose an address nor said why not"; }
  fi
  nothing_left "stock hosts, head host"
fi

[ "$failed" = 0 ] && echo "launch: all checks passed"
exit "$failed"
