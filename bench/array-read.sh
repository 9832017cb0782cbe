#!/usr/bin/env bash
# Array rows through a dataset mount against the format's own Python library reading the same rows
# directly: HDF5 against h5py (issue 20, measure c), NetCDF classic against netCDF4 (issue 32) and
# ADIOS2 against ADIOS2's own reader (issue 46).
# Writes the file (bench/python/hdf5_rows.py make: a contiguous and a chunked shuffle+gzip float32
# dataset; bench/python/netcdf_rows.py make: a CDF-5 file with a fixed-size float32 variable and a
# record variable interleaved with another; bench/python/adios2_rows.py make: a BP5 and a BP4
# directory, each a float32 variable of 4 steps written in two blocks a step), starts tenplexd with
# --mount and --data-root, mounts each array by its URL (one rank, G = 64, shuffled), waits for loading
# (the daemon reads, and for HDF5 decodes, every row once), then reads rank 0's rows in the mount's
# order ROUNDS times through FUSE and with the library, alternating the order, and prints medians side
# by side with their ratio, and the load average before and after (the rates are only comparable on an
# idle machine). Needs root (/dev/fuse), python3-h5py or python3-netcdf4; for ADIOS2, which bookworm
# lacks, the trixie chroot of bin/lib/adios2-env.sh (built on first use), where the Python side runs,
# reading the FUSE view and the files under the chroot's /tmp.
# Usage: bench/array-read.sh hdf5|netcdf|adios2 [rows, default 32768 / 16384 / 16384] [floats per row, default 1024] [rounds, default 3]
set -euo pipefail
FORMAT=${1:?usage: bench/array-read.sh hdf5|netcdf|adios2 [rows] [floats per row] [rounds]}
case "$FORMAT" in
  hdf5) module=h5py; script=hdf5_rows.py; file=rows.h5; arrays="contig gzip"; rows=32768
        title="HDF5 rows"; what="read and decoded"
        labels='[["mount", "mount (FUSE, tenplex.RankReader)"], ["h5py_batches", "h5py, a fancy-indexed read per batch"], ["h5py_rows", "h5py, row by row"]]' ;;
  netcdf) module=netCDF4; script=netcdf_rows.py; file=rows.nc; arrays="fixed rec"; rows=16384
        title="NetCDF classic (CDF-5) rows"; what="read"
        labels='[["mount", "mount (FUSE, tenplex.RankReader)"], ["netcdf4_batches", "netCDF4, a sorted-index read per batch"], ["netcdf4_rows", "netCDF4, row by row"]]' ;;
  adios2) module=adios2; script=adios2_rows.py; file=.; arrays="bp5 bp4"; rows=16384
        title="ADIOS2 rows (4 steps, 2 blocks a step)"; what="read"
        labels='[["mount", "mount (FUSE, tenplex.RankReader)"], ["adios2_batches", "ADIOS2, a selection per step per batch"], ["adios2_rows", "ADIOS2, row by row"]]' ;;
  *) echo "array-read.sh: the format is hdf5, netcdf or adios2, not $FORMAT" >&2; exit 2 ;;
esac
ROWS=${2:-$rows}
WIDTH=${3:-1024}
ROUNDS=${4:-3}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jail=""  # the chroot the Python side runs in (ADIOS2), else none
if [ "$FORMAT" = adios2 ]; then
  bin/lib/adios2-env.sh check >/dev/null 2>&1 || bin/lib/adios2-env.sh build >&2
  jail="$(bin/lib/adios2-env.sh path)"
fi
# (ADIOS2 loads UCX, which without /proc logs an error about the boot id to stdout: kept quiet)
py() { if [ -n "$jail" ]; then UCX_LOG_LEVEL=fatal chroot "$jail" /usr/bin/python3 "$@"; else /usr/bin/python3 "$@"; fi; }
inside() { echo "${1#"$jail"}"; }  # a path as the Python side sees it
py -c "import $module" || { echo "array-read.sh $FORMAT needs $module (Debian's python3 package)" >&2; exit 2; }
[ -f daemon/target/tenplexd.jar ] && [ -f cli/target/tenplex.jar ] || ./mvnw -B -q -DskipTests -pl cli -am package
work=$(mktemp -d "$jail/tmp/tenplex-$FORMAT-bench.XXXXXX")
scripts="$root/bench/python"
if [ -n "$jail" ]; then  # the scripts and the client, where the chroot sees them
  mkdir -p "$work/src/bench" "$work/src/clients"
  cp -r bench/python "$work/src/bench/" && cp -r clients/python "$work/src/clients/"
  scripts="$work/src/bench/python"
fi
pid=""
cleanup() {
  [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  fusermount -u -z "$work/t" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
py "$(inside "$scripts/$script")" make "$(inside "$work/$file")" "$ROWS" "$WIDTH"
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
echo "$title: $ROWS rows of $((WIDTH * 4)) bytes ($mb MiB per array), rank 0 of 1, G = 64, shuffled; medians of $ROUNDS rounds"
for a in $arrays; do
  case "$FORMAT" in
    hdf5) url="hdf5://$work/$file#/$a"; at="$work/$file"; name="$a" ;;
    netcdf) url="netcdf://$work/$file#$a"; at="$work/$file"; name="$a" ;;
    adios2) url="adios2://$work/$a.bp#x"; at="$work/$a.bp"; name=x ;;
  esac
  java -cp cli/target/tenplex.jar io.tenplex.cli.TenplexCli dataset mount --addr "http://$addr" --job "$a" \
    --index "$url" --global-batch 64 --dp 1 --seed 1 >/dev/null
  until status=$(curl -sf "http://$addr/api/v1/datasets/$a?wait=60000") && echo "$status" | grep -q '"state":"loaded"'; do
    echo "$status" | grep -q '"state":"loading"' || { echo "not loading: $status" >&2; exit 1; }
  done
  py "$(inside "$scripts/$script")" read "$(inside "$work/t")" "$a" "$(inside "$at")" "$name" "$ROUNDS" > "$work/$a.json"
  /usr/bin/python3 - "$work/$a.json" "$status" "$a" "$what" "$labels" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
load = json.loads(sys.argv[2])
name, what, labels = sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
s, v = r["seconds"], r["rowsPerSecond"]
mb = r["rows"] * r["rowBytes"] / 1e6
loaded = load.get("load", {}).get("loadedMillis", load.get("loadedMillis"))
print("%s: the daemon loaded (%s) the rows in %.2f s: %.0f rows/s, %.1f MB/s (once per mount, "
      "in the background while training reads)" % (name, what, loaded / 1e3, r["rows"] / (loaded / 1e3), mb / (loaded / 1e3)))
print("  %-38s %10s %10s %12s" % ("one pass over rank 0's rows", "rows/s", "MB/s", "mount/this"))
for k, label in labels:
    print("  %-38s %10.0f %10.0f %12.2f" % (label, v[k], mb / s[k], v["mount"] / v[k]))
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
