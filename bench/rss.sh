#!/usr/bin/env bash
# Peak RSS of a real tenplexd (started by bin/tenplexd) holding 4 GiB of tensors (16 x 256 MiB),
# against the tensor bytes: the overhead target is <= 5%.
# Usage: bench/rss.sh   (builds what it needs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -f bench/target/benchmarks.jar ] || ./mvnw -B -q -DskipTests -pl bench -am package
log=$(mktemp)
bin/tenplexd --port 0 --memory-limit 6g >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=""
while [ -z "$port" ]; do
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  port=$(sed -n 's/.*ready on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] || sleep 0.2
done
idle=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
java -Xmx256m -XX:MaxDirectMemorySize=1g -cp bench/target/benchmarks.jar io.tenplex.bench.UploadTensors "$port" 16 256
tensor_kb=$((16 * 256 * 1024))
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
awk -v idle="$idle" -v rss="$rss" -v hwm="$hwm" -v t="$tensor_kb" 'BEGIN {
  printf "idle RSS %.0f MiB; holding %.0f MiB of tensors: RSS %.0f MiB, peak RSS %.0f MiB\n", idle/1024, t/1024, rss/1024, hwm/1024;
  printf "overhead above tensor bytes: RSS %.1f%%, peak %.1f%% (target <= 5%%)\n", (rss-t)*100/t, (hwm-t)*100/t }'
