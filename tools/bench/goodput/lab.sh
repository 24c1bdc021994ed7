# Sourced by run.sh: the node hosts of the goodput benchmark and the processes
# on them. Uses run.sh's variables: loopback, out, dtrain, period, jitter,
# duration. Every process is started here and stopped by its pid.
#
# Hosts: with loopback=0, network namespaces gp<PID>-h0..h3 on a bridge in
# gp<PID>-br (as tests/support/netns_lab.cpp builds them): 10.213.0.1 runs the
# head and the driver, .2-.4 one node with one slot each; TLS between them
# (certificates in OUT/home/tls). With loopback=1, processes on 127.0.0.1 with
# plain remoting.

lab_prefix="gp$$-"
lab_made=()          # namespaces created, for lab_destroy
sup_pids=()          # node supervisors of the current run
head_pid="" head_address=""

lab_ns() { echo "${lab_prefix}h$1"; }
lab_ip() { echo "10.213.0.$(($1 + 1))"; }

# lab_create: the namespaces (once per invocation) and the certificates.
lab_create() {
    export DTRAIN_HOME=$out/home
    mkdir -p "$DTRAIN_HOME"
    [ "$loopback" = 1 ] && return 0
    local br="${lab_prefix}br" h step
    local steps=("ip netns add $br" "ip -n $br link add br0 type bridge" "ip -n $br link set br0 up")
    lab_made+=("$br")
    for h in 0 1 2 3; do
        lab_made+=("$(lab_ns $h)")
        steps+=("ip netns add $(lab_ns $h)"
                "ip -n $br link add p$h type veth peer name eth0 netns $(lab_ns $h)"
                "ip -n $br link set p$h master br0 up"
                "ip -n $(lab_ns $h) addr add $(lab_ip $h)/24 dev eth0"
                "ip -n $(lab_ns $h) link set eth0 up"
                "ip -n $(lab_ns $h) link set lo up")
    done
    for step in "${steps[@]}"; do
        $step || { echo "lab: '$step' failed" >&2; return 1; }
    done
    local tls=$DTRAIN_HOME/tls q=(--dir "$DTRAIN_HOME/tls")
    mkdir -p "$tls"
    "$dtrain" cert ca create "${q[@]}" > /dev/null &&
        "$dtrain" cert create --head --host "$(lab_ip 0)" "${q[@]}" > /dev/null &&
        "$dtrain" cert create --node --host "$(lab_ip 1)" --host "$(lab_ip 2)" --host "$(lab_ip 3)" \
            "${q[@]}" > /dev/null &&
        "$dtrain" cert create --client "${q[@]}" > /dev/null ||
        { echo "lab: dtrain cert failed" >&2; return 1; }
}

lab_destroy() {
    local n
    for n in "${lab_made[@]}"; do ip netns del "$n" 2>/dev/null; done
    lab_made=()
}

# on_host H CMD...: replaces the calling (background) subshell with CMD on
# host H, so that $! is CMD's pid: `ip netns exec` and `unshare` exec.
on_host() {
    local h=$1; shift
    if [ "$loopback" = 1 ]; then exec "$@"; fi
    exec ip netns exec "$(lab_ns "$h")" unshare --uts -- /bin/sh -c \
        "hostname dtrain-host$h && exec \"\$@\"" sh "$@"
}

wait_for_file() {  # FILE SECONDS: true once FILE is non-empty
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        [ -s "$1" ] && return 0
        sleep 0.05
    done
    return 1
}

head_up() {  # DIR
    local dir=$1 bind=()
    [ "$loopback" = 0 ] && bind=(--bind "$(lab_ip 0)")
    (on_host 0 "$dtrain" start --head "${bind[@]}" --port 0 --port-file "$dir/head.address" \
        --store "$dir/store.db") > "$dir/head.log" 2>&1 &
    head_pid=$!
    wait_for_file "$dir/head.address" 20 || { echo "lab: the head did not start" >&2; return 1; }
    head_address=$(cat "$dir/head.address")
}

# supervise H DIR: runs a one-slot node on host H, and again whenever it
# exits, until DIR/stop exists. Logs "<time> start|exit host=H pid=P".
supervise() {
    local h=$1 dir=$2 n=0 pid rc
    while [ ! -e "$dir/stop" ]; do
        n=$((n + 1))
        rm -f "$dir/node$h.port"
        (on_host "$h" "$dtrain" start --address "$head_address" --slots 1 --cpus 1 \
            --port-file "$dir/node$h.port") >> "$dir/node$h.log" 2>&1 &
        pid=$!
        echo "$pid" > "$dir/node$h.pid"
        echo "$(now) start host=$h pid=$pid n=$n" >> "$dir/supervisor.log"
        wait "$pid"; rc=$?
        echo "$(now) exit host=$h pid=$pid rc=$rc" >> "$dir/supervisor.log"
        sleep 0.2
    done
}

# A node pid of ours: alive, not a zombie, and a child of one of sup_pids.
our_node() {
    local stat state parent s
    { read -r stat < "/proc/$1/stat"; } 2>/dev/null || return 1
    read -r state parent _ <<< "${stat##*) }"
    case $state in Z|X) return 1 ;; esac
    for s in "${sup_pids[@]}"; do [ "$parent" = "$s" ] && return 0; done
    return 1
}

# kill_nodes DIR DRIVER_PID: every PERIOD (+ [0, JITTER)) seconds for
# DURATION seconds, SIGKILLs one node that hosts a replica (DIR/placement,
# written by the driver at epoch ends; any node of ours if none does).
# One line per kill to DIR/kills.log: "<time> kill n=K pid=P host=H due=S".
kill_nodes() {
    local dir=$1 drv=$2 start k=0 due jit h p victim vh cands
    start=$(now)
    RANDOM=1
    : > "$dir/kills.log"
    while kill -0 "$drv" 2>/dev/null; do
        jit=$(awk -v j="$jitter" -v r="$RANDOM" 'BEGIN { printf "%.6f", j * r / 32768 }')
        due=$(awk -v s="$start" -v p="$period" -v k="$k" -v j="$jit" \
              'BEGIN { printf "%.6f", s + (k + 1) * p + j }')
        awk -v a="$due" -v s="$start" -v d="$duration" 'BEGIN { exit !(a > s + d) }' && break
        while awk -v a="$due" -v b="$(now)" 'BEGIN { exit !(b < a) }'; do
            kill -0 "$drv" 2>/dev/null || return 0
            sleep 0.05
        done
        cands=()
        for h in 1 2 3; do
            p=$(cat "$dir/node$h.pid" 2>/dev/null) || continue
            our_node "$p" && grep -qx "$p" "$dir/placement" 2>/dev/null && cands+=("$h:$p")
        done
        if [ ${#cands[@]} = 0 ]; then
            for h in 1 2 3; do
                p=$(cat "$dir/node$h.pid" 2>/dev/null) || continue
                our_node "$p" && cands+=("$h:$p")
            done
        fi
        k=$((k + 1))
        [ ${#cands[@]} = 0 ] && { echo "$(now) skip n=$k (no node up)" >> "$dir/killer.log"; continue; }
        victim=${cands[$((RANDOM % ${#cands[@]}))]}
        vh=${victim%%:*} p=${victim#*:}
        our_node "$p" || continue
        kill -KILL "$p" 2>/dev/null || continue
        echo "$(now) kill n=$k pid=$p host=$vh due=$(awk -v a="$due" -v s="$start" \
             'BEGIN { printf "%.3f", a - s }')" >> "$dir/kills.log"
    done
}

# lab_down: stops this run's nodes (their supervisors first see DIR/stop),
# the head and the supervisors, each by pid.
lab_down() {
    local dir=$run_dir s i p f
    [ -n "$dir" ] || return 0
    touch "$dir/stop"
    for ((i = 0; i < 50; i++)); do
        for f in "$dir"/node[123].pid; do
            [ -e "$f" ] || continue
            p=$(cat "$f"); our_node "$p" && kill -TERM "$p" 2>/dev/null
        done
        local alive=0
        for s in "${sup_pids[@]}"; do kill -0 "$s" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.2
    done
    for s in "${sup_pids[@]}"; do kill -KILL "$s" 2>/dev/null; done
    for f in "$dir"/node[123].pid; do
        [ -e "$f" ] && { p=$(cat "$f"); kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; }
    done
    if [ -n "$head_pid" ]; then
        kill -TERM "$head_pid" 2>/dev/null
        for ((i = 0; i < 25; i++)); do kill -0 "$head_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$head_pid" 2>/dev/null
    fi
    wait 2>/dev/null
    sup_pids=() head_pid="" run_dir=""
}
