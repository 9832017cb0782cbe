#!/usr/bin/env bash
# NetCDF classic rows through a dataset mount against netCDF4 reading the same rows directly (issue 32).
# Writes one CDF-5 file (bench/python/netcdf_rows.py make: a fixed-size float32 variable and a record
# variable interleaved with another), starts tenplexd with --mount and --data-root, mounts each
# variable by its netcdf:// URL (one rank, G = 64, shuffled), waits for loading, then reads rank 0's
# rows in the mount's order ROUNDS times through FUSE and with netCDF4, alternating the order, and
# prints medians side by side with their ratio, and the load average before and after (the rates are
# only comparable on an idle machine). Needs root (/dev/fuse), python3-netcdf4.
# Usage: bench/netcdf-read.sh [rows, default 16384] [floats per row, default 1024] [rounds, default 3]
set -euo pipefail
ROWS=${1:-16384}
WIDTH=${2:-1024}
ROUNDS=${3:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
/usr/bin/python3 -c 'import netCDF4' || { echo "netcdf-read.sh needs python3-netcdf4" >&2; exit 2; }
[ -f daemon/target/tenplexd.jar ] && [ -f cli/target/tenplex.jar ] || ./mvnw -B -q -DskipTests -pl cli -am package
work=$(mktemp -d /tmp/tenplex-netcdf-bench.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  fusermount -u -z "$work/t" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
/usr/bin/python3 bench/python/netcdf_rows.py make "$work/rows.nc" "$ROWS" "$WIDTH"
mb=$((ROWS * WIDTH * 4 >> 20))
mkdir -p "$work/t"
: >"$work/tenplexd.log"
java -Xms64m -Xmx1g -XX:+UseSerialGC -XX:MaxDirectMemorySize=$((mb * 4 + 1024))m -jar daemon/target/tenplexd.jar \
  --port 0 --mount "$work/t" --memory-limit $((mb * 3 + 512))m --data-root "$work" >"$work/tenplexd.log" 2>&1 &
pid=$!
until grep -q "ready on" "$work/tenplexd.log"; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/tenplexd.log"; exit 1; }
  sleep 0.2
done
addr=$(grep -o "ready on http://[^ ]*" "$work/tenplexd.log" | head -1 | sed 's|ready on http://||')
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "NetCDF classic (CDF-5) rows: $ROWS rows of $((WIDTH * 4)) bytes ($mb MiB per variable), rank 0 of 1, G = 64, shuffled; medians of $ROUNDS rounds"
for ds in fixed rec; do
  java -cp cli/target/tenplex.jar io.tenplex.cli.TenplexCli dataset mount --addr "http://$addr" --job "$ds" \
    --index "netcdf://$work/rows.nc#$ds" --global-batch 64 --dp 1 --seed 1 >/dev/null
  until status=$(curl -sf "http://$addr/api/v1/datasets/$ds?wait=60000") && echo "$status" | grep -q '"state":"loaded"'; do
    echo "$status" | grep -q '"state":"loading"' || { echo "not loading: $status" >&2; exit 1; }
  done
  /usr/bin/python3 bench/python/netcdf_rows.py read "$work/t" "$ds" "$work/rows.nc" "$ds" "$ROUNDS" > "$work/$ds.json"
  /usr/bin/python3 - "$work/$ds.json" "$status" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
load = json.loads(sys.argv[2])
s, v = r["seconds"], r["rowsPerSecond"]
mb = r["rows"] * r["rowBytes"] / 1e6
loaded = load.get("load", {}).get("loadedMillis", load.get("loadedMillis"))
print("%s: the daemon loaded (read) the rows in %.2f s: %.0f rows/s, %.1f MB/s (once per mount, "
      "in the background while training reads)" % (r["variable"], loaded / 1e3, r["rows"] / (loaded / 1e3), mb / (loaded / 1e3)))
print("  %-38s %10s %10s %12s" % ("one pass over rank 0's rows", "rows/s", "MB/s", "mount/this"))
for k, label in (("mount", "mount (FUSE, tenplex.RankReader)"), ("netcdf4_batches", "netCDF4, a sorted-index read per batch"),
                 ("netcdf4_rows", "netCDF4, row by row")):
    print("  %-38s %10.0f %10.0f %12.2f" % (label, v[k], mb / s[k], v["mount"] / v[k]))
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
