#!/usr/bin/env bash
# Benchmark (b): the rehearsal buffer's augmentation overhead on a training step. W tenplexd
# processes on loopback (one per data-parallel rank, started with --peers) and W trainer processes
# (bench/python/rehearsal_step.py) with and without the buffer, rounds interleaved. Every process
# started here is stopped by its PID on exit.
# Usage: bench/rehearsal-overhead.sh [W] [-- more driver options, e.g. --step-list 50,100 --r 16]
# Build first: ./mvnw -B -q -o -DskipTests -pl daemon -am package
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
W=${1:-4}
shift $(( $# < 1 ? $# : 1 )); [ "${1:-}" = "--" ] && shift
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
  bin/tenplexd --port "$p" --memory-limit 256m --peers "$peers" >"$tmp/d$w.log" 2>&1 &
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
/usr/bin/python3 bench/python/rehearsal_step.py --daemons "$peers" "$@" &
driver=$!
pids=("$driver" "${pids[@]}")
wait "$driver"
