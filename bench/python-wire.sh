#!/usr/bin/env bash
# The Python client's REST path (save, load, 2000 small tensors) against one large request of the
# same bytes, side by side (bench/python/wire_speed.py), against a real tenplexd started by
# bin/tenplexd. Usage: bench/python-wire.sh [rounds] [state GB] (TENPLEX_CLIENT: another client dir)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
gb="${2:-2}"
log=$(mktemp)
# room for the state, its replacement while it is uploaded again, and the single tensor
bin/tenplexd --port 0 --memory-limit "$(/usr/bin/python3 -c "print(int($gb * 3.5 + 1) * 1024)")m" >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=""
while [ -z "$port" ]; do
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  port=$(sed -n 's/.*ready on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] || sleep 0.2
done
TENPLEX_ADDR="http://127.0.0.1:$port" /usr/bin/python3 bench/python/wire_speed.py "${1:-3}" "$gb"
