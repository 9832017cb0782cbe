#!/usr/bin/env bash
# Step-time overhead of checkpoint tiers on a running job: W tenplexd processes on loopback (one per
# rank, started with --peers) and W torch trainer processes (bench/python/tier_step.py), cases no
# tiers, L2 (partners 1) and L3 (groups of k, 1 parity block) side by side. Every process started
# here is stopped by its PID on exit.
# Usage: bench/tier-step-overhead.sh [W] [MiB per rank] [steps] [save every K] [rounds] [-- more driver options]
# Build first: ./mvnw -B -q -o -DskipTests -pl daemon,bench -am package
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
W=${1:-4}; MIB=${2:-64}; STEPS=${3:-40}; EVERY=${4:-10}; ROUNDS=${5:-2}
shift $(( $# < 5 ? $# : 5 )); [ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  grep -h "WARN" "$tmp"/d*.log 2>/dev/null | sed 's/^/daemon: /' | tail -n 5 >&2 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ports=$(/usr/bin/python3 -c "
import socket
ss=[socket.socket() for _ in range($W)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))")
peers=""; w=0
for p in $ports; do peers="$peers${peers:+,}$w=127.0.0.1:$p"; w=$((w+1)); done
w=0
for p in $ports; do
  bin/tenplexd --port "$p" --memory-limit 2g --peers "$peers" >"$tmp/d$w.log" 2>&1 &
  pids+=($!)
  w=$((w+1))
done
for w in $(seq 0 $((W-1))); do
  until grep -q "ready on" "$tmp/d$w.log"; do
    kill -0 "${pids[$w]}" 2>/dev/null || { cat "$tmp/d$w.log"; exit 1; }
    sleep 0.2
  done
done
# in the background, so that a TERM or INT reaches the trap at once (bash runs traps only between commands)
/usr/bin/python3 bench/python/tier_step.py --daemons "$peers" --mib "$MIB" --steps "$STEPS" --every "$EVERY" \
  --rounds "$ROUNDS" --tmp "$tmp" "$@" &
driver=$!
pids=("$driver" "${pids[@]}")
wait "$driver"
