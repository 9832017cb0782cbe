#!/usr/bin/env bash
# Multi-worker reconfiguration bandwidth benchmark: one tenplexd per network namespace, every
# worker's link shaped with tc to the same rate, a GPT-like job reconfigured across them
# (DP 2->4, TP 2->4, PP 2->4, and (4,2,1)->(2,2,2) with 8 workers); prints wall time against the
# network lower bound. Needs root (ip netns, tc). Creates and removes its namespaces itself.
# Usage: bench/netns-reconfigure.sh [workers, default 8] [rate, default 1gbit] [--central] [--unpaced] [--cold] [--only CASE]
# (--cold: no warm-up reconfigurations of a small model before measuring; --unpaced: also run each
# case without the link rate, flows left to TCP, and compare)
# Environment: TBF_BURST, TBF_LATENCY (tc tbf settings, default 1mb and 100ms); TC_TRACE=FILE writes
# each worker's uplink/downlink Mbit/s about every second.
set -euo pipefail
N=${1:-8}
RATE=${2:-1gbit}
shift 2 2>/dev/null || shift $#
extra=("$@")
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -f daemon/target/tenplexd.jar ] && [ -f bench/target/benchmarks.jar ] || ./mvnw -B -q -DskipTests package
case "$RATE" in *gbit) bits=$(( ${RATE%gbit} * 1000000000 ));; *mbit) bits=$(( ${RATE%mbit} * 1000000 ));; *) echo "rate like 1gbit or 500mbit" >&2; exit 2;; esac
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # delete the veths first: a namespace is destroyed asynchronously, and its veth with it
  for i in $(seq 0 $((N - 1))); do ip link del "tpxv$i" 2>/dev/null || true; ip netns del "tpx$i" 2>/dev/null || true; done
  ip link del tpxbr0 2>/dev/null || true
}
trap cleanup EXIT
ip link add tpxbr0 type bridge
ip addr add 10.77.0.254/24 dev tpxbr0
ip link set tpxbr0 up
addrs=()
for i in $(seq 0 $((N - 1))); do
  ns="tpx$i"; ipaddr="10.77.0.$((i + 1))"
  ip netns add "$ns"
  ip link add "tpxv$i" type veth peer name eth0 netns "$ns"
  ip link set "tpxv$i" master tpxbr0 up
  ip netns exec "$ns" ip addr add "$ipaddr/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  # the worker's uplink (what it sends) and downlink (what it receives), each at RATE
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$RATE" burst "${TBF_BURST:-1mb}" latency "${TBF_LATENCY:-100ms}"
  tc qdisc add dev "tpxv$i" root tbf rate "$RATE" burst "${TBF_BURST:-1mb}" latency "${TBF_LATENCY:-100ms}"
  ip netns exec "$ns" java -Xms64m -Xmx512m -XX:+UseSerialGC -XX:MaxDirectMemorySize=6g -jar daemon/target/tenplexd.jar \
    --bind "$ipaddr" --port 20010 --memory-limit 3g >"/tmp/tpx$i.log" 2>&1 &
  pids+=($!)
  addrs+=("$ipaddr:20010")
done
for i in $(seq 0 $((N - 1))); do
  until grep -q "ready on" "/tmp/tpx$i.log"; do
    kill -0 "${pids[$i]}" 2>/dev/null || { cat "/tmp/tpx$i.log"; exit 1; }
    sleep 0.2
  done
done
if [ -n "${TC_TRACE:-}" ]; then
  # about every second: Mbit/s sent on each worker's uplink (u) and downlink (d), into $TC_TRACE
  ( declare -A last; t0=""
    while sleep 1; do
      now=$(date +%s%N); line=""
      for i in $(seq 0 $((N - 1))); do
        up=$(ip netns exec "tpx$i" tc -s qdisc show dev eth0 | awk '/Sent/{print $2; exit}')
        down=$(tc -s qdisc show dev "tpxv$i" | awk '/Sent/{print $2; exit}')
        [ -n "$up" ] && [ -n "$down" ] || exit 0
        if [ -n "$t0" ]; then
          line+=" $i:$(( (up - ${last[${i}u]}) * 8000 / (now - t0) ))/$(( (down - ${last[${i}d]}) * 8000 / (now - t0) ))"
        fi
        last[${i}u]=$up; last[${i}d]=$down
      done
      [ -z "$t0" ] || echo "${line# }"
      t0=$now
    done >"$TC_TRACE" ) &
  pids+=($!)
fi
java -Xmx2g -cp bench/target/benchmarks.jar io.tenplex.bench.NetReconfigureBench "$bits" "${extra[@]}" "${addrs[@]}"
