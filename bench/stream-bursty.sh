#!/usr/bin/env bash
# Benchmark (a) of the streamed-sample buffers: one tenplexd on loopback, a bursty wave of simulated
# producers (default 100, a gap, then 50) against a faster trainer, for FIFO, FIRO and Reservoir
# (bench/python/stream_bursty.py prints Markdown tables). The daemon started here is stopped by its
# PID on exit.
# Usage: bench/stream-bursty.sh [-- driver options, e.g. --p1 100 --p2 50 --steps 10]
# Build first: ./mvnw -B -q -o -DskipTests -pl daemon -am package
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
bin/tenplexd --port "$port" --memory-limit 256m >"$tmp/d.log" 2>&1 &
pids+=($!)
until grep -q "ready on" "$tmp/d.log"; do
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$tmp/d.log"; exit 1; }
  sleep 0.2
done
/usr/bin/python3 bench/python/stream_bursty.py --addr "http://127.0.0.1:$port" --tmp "$tmp" "$@" &
driver=$!
pids=("$driver" "${pids[@]}")
wait "$driver"
