# Sourced by benchmarks that run W tenplexd processes on loopback, each told of all by --peers.
# start_loopback_daemons W MEMORY [more tenplexd options]: picks W free ports, starts the daemons
# (logs in $tmp/d<w>.log), waits until each is ready, and sets $peers (w=127.0.0.1:port,...) and
# $pids; on exit every process in $pids is stopped by its PID and $tmp removed. Add a driver's PID
# to $pids (first, so it is stopped before the daemons it talks to).
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

start_loopback_daemons() {
  local n=$1 memory=$2 p w ports
  shift 2
  ports=$(/usr/bin/python3 -c "
import socket
ss=[socket.socket() for _ in range($n)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))")
  peers=""; w=0
  for p in $ports; do peers="$peers${peers:+,}$w=127.0.0.1:$p"; w=$((w+1)); done
  w=0
  for p in $ports; do
    bin/tenplexd --port "$p" --memory-limit "$memory" --peers "$peers" "$@" >"$tmp/d$w.log" 2>&1 &
    pids+=($!)
    w=$((w+1))
  done
  for w in $(seq 0 $((n-1))); do
    until grep -q "ready on" "$tmp/d$w.log"; do
      kill -0 "${pids[$w]}" 2>/dev/null || { cat "$tmp/d$w.log"; exit 1; }
      sleep 0.2
    done
  done
}
