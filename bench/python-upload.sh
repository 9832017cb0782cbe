#!/usr/bin/env bash
# Python client upload of a many-tensor state (bench/python/upload_state.py) against a real tenplexd
# started by bin/tenplexd. Usage: bench/python-upload.sh [rounds] (TENPLEX_CLIENT: another client dir)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log=$(mktemp)
bin/tenplexd --port 0 --memory-limit 2g >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=""
while [ -z "$port" ]; do
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  port=$(sed -n 's/.*ready on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] || sleep 0.2
done
TENPLEX_ADDR="http://127.0.0.1:$port" /usr/bin/python3 bench/python/upload_state.py "${1:-5}"
