#!/usr/bin/env bash
# Recovery benchmark: four tenplexd, one per network namespace, links shaped with tc as in
# netns-reconfigure.sh, started with --peers and --link-rate. A GPT-like job (2,2,1), rank r on worker
# r, is saved with partner copies (L2, partners=1) or erasure-coded groups (L3, k=3, m=1); one daemon
# is killed with SIGKILL by PID, and the time from the resource change with "recover": true to the
# new configuration's load being in place is compared with the network lower bound
# (io.tenplex.bench.RecoveryBound). Every run starts fresh daemons in fresh namespaces.
# Needs root (ip netns, tc). Removes its namespaces and stops its daemons by PID on exit.
# Usage: bench/netns-recover.sh [rate, default 100mbit] [runs per case, default 3] [cases, default "partners erasure"]
set -euo pipefail
RATE=${1:-100mbit}
RUNS=${2:-3}
CASES=${3:-partners erasure}
N=4
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -f daemon/target/tenplexd.jar ] && [ -f bench/target/benchmarks.jar ] || ./mvnw -B -q -DskipTests package
case "$RATE" in *gbit) bits=$(( ${RATE%gbit} * 1000000000 ));; *mbit) bits=$(( ${RATE%mbit} * 1000000 ));; *) echo "rate like 1gbit or 500mbit" >&2; exit 2;; esac
pids=()
teardown() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  for i in $(seq 0 $((N - 1))); do ip link del "tpxrv$i" 2>/dev/null || true; ip netns del "tpxr$i" 2>/dev/null || true; done
  ip link del tpxrbr0 2>/dev/null || true
}
trap teardown EXIT
peers=""
for i in $(seq 0 $((N - 1))); do peers+="${peers:+,}$i=10.78.0.$((i + 1)):20010"; done
setup() {
  ip link add tpxrbr0 type bridge
  ip addr add 10.78.0.254/24 dev tpxrbr0
  ip link set tpxrbr0 up
  args=()
  for i in $(seq 0 $((N - 1))); do
    ns="tpxr$i"; ipaddr="10.78.0.$((i + 1))"
    ip netns add "$ns"
    ip link add "tpxrv$i" type veth peer name eth0 netns "$ns"
    ip link set "tpxrv$i" master tpxrbr0 up
    ip netns exec "$ns" ip addr add "$ipaddr/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$RATE" burst "${TBF_BURST:-1mb}" latency "${TBF_LATENCY:-100ms}"
    tc qdisc add dev "tpxrv$i" root tbf rate "$RATE" burst "${TBF_BURST:-1mb}" latency "${TBF_LATENCY:-100ms}"
    ip netns exec "$ns" java -Xms64m -Xmx512m -XX:+UseSerialGC -XX:MaxDirectMemorySize=3g -jar daemon/target/tenplexd.jar \
      --bind "$ipaddr" --port 20010 --memory-limit 2g --peers "$peers" --link-rate "$RATE" >"/tmp/tpxr$i.log" 2>&1 &
    pids+=($!)
    args+=("$ipaddr:20010=$!")
  done
  for i in $(seq 0 $((N - 1))); do
    until grep -q "ready on" "/tmp/tpxr$i.log"; do
      kill -0 "${pids[$i]}" 2>/dev/null || { cat "/tmp/tpxr$i.log"; exit 1; }
      sleep 0.2
    done
  done
}
for c in $CASES; do
  # L2: lose the last worker (its ranks are copied on worker 0); L3: lose worker 1 of the group {0,1,2}
  lost=3; [ "$c" = erasure ] && lost=1
  for r in $(seq 1 "$RUNS"); do
    setup
    java -Xmx2g -cp bench/target/benchmarks.jar io.tenplex.bench.RecoveryBench "$bits" "$c" "$lost" "${args[@]}"
    teardown
  done
done
