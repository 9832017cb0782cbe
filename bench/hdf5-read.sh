#!/usr/bin/env bash
# HDF5 rows through a dataset mount against h5py reading the same rows directly (issue 20, measure c).
# Writes one HDF5 file (bench/python/hdf5_rows.py make: a contiguous and a chunked shuffle+gzip float32
# dataset), starts tenplexd with --mount and --data-root, mounts each dataset by its hdf5:// URL (one
# rank, G = 64, shuffled), waits for loading (the daemon decodes every chunk once, filling all its rows), then
# reads rank 0's rows in the mount's order ROUNDS times through FUSE and with h5py, alternating the
# order, and prints medians side by side with their ratio, and the load average before and after (the
# rates are only comparable on an idle machine). Needs root (/dev/fuse), python3-h5py.
# Usage: bench/hdf5-read.sh [rows, default 32768] [floats per row, default 1024] [rounds, default 3]
set -euo pipefail
ROWS=${1:-32768}
WIDTH=${2:-1024}
ROUNDS=${3:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
/usr/bin/python3 -c 'import h5py' || { echo "hdf5-read.sh needs python3-h5py" >&2; exit 2; }
[ -f daemon/target/tenplexd.jar ] && [ -f cli/target/tenplex.jar ] || ./mvnw -B -q -DskipTests -pl cli -am package
work=$(mktemp -d /tmp/tenplex-hdf5-bench.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  fusermount -u -z "$work/t" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
/usr/bin/python3 bench/python/hdf5_rows.py make "$work/rows.h5" "$ROWS" "$WIDTH"
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
echo "HDF5 rows: $ROWS rows of $((WIDTH * 4)) bytes ($mb MiB per dataset), rank 0 of 1, G = 64, shuffled; medians of $ROUNDS rounds"
for ds in contig gzip; do
  java -cp cli/target/tenplex.jar io.tenplex.cli.TenplexCli dataset mount --addr "http://$addr" --job "$ds" \
    --index "hdf5://$work/rows.h5#/$ds" --global-batch 64 --dp 1 --seed 1 >/dev/null
  until status=$(curl -sf "http://$addr/api/v1/datasets/$ds?wait=60000") && echo "$status" | grep -q '"state":"loaded"'; do
    echo "$status" | grep -q '"state":"loading"' || { echo "not loading: $status" >&2; exit 1; }
  done
  /usr/bin/python3 bench/python/hdf5_rows.py read "$work/t" "$ds" "$work/rows.h5" "$ds" "$ROUNDS" > "$work/$ds.json"
  /usr/bin/python3 - "$work/$ds.json" "$status" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
load = json.loads(sys.argv[2])
s, v = r["seconds"], r["rowsPerSecond"]
mb = r["rows"] * r["rowBytes"] / 1e6
loaded = load.get("load", {}).get("loadedMillis", load.get("loadedMillis"))
print("/%s: the daemon loaded (read and decoded) the rows in %.2f s: %.0f rows/s, %.1f MB/s (once per mount, "
      "in the background while training reads)" % (r["dataset"], loaded / 1e3, r["rows"] / (loaded / 1e3), mb / (loaded / 1e3)))
print("  %-38s %10s %10s %12s" % ("one pass over rank 0's rows", "rows/s", "MB/s", "mount/this"))
for k, label in (("mount", "mount (FUSE, tenplex.RankReader)"), ("h5py_batches", "h5py, a fancy-indexed read per batch"),
                 ("h5py_rows", "h5py, row by row")):
    print("  %-38s %10.0f %10.0f %12.2f" % (label, v[k], mb / s[k], v["mount"] / v[k]))
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
