#!/usr/bin/env bash
# FUSE read benchmark: our mount (tenplexd --mount) against a C libfuse in-memory file system serving
# the same bytes, side by side in one run, with fio. Builds the baseline (bench/c/memfs.c) itself;
# needs root, /dev/fuse, gcc, libfuse-dev, fio. Prints medians of ROUNDS rounds (the order of the two
# file systems alternates between rounds) and their ratios.
# Usage: bench/fuse-read.sh [size MiB, default 1024] [rounds, default 5]
set -euo pipefail
SIZE_MB=${1:-1024}
ROUNDS=${2:-5}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for tool in gcc fio pkg-config curl; do
  command -v "$tool" >/dev/null || { echo "fuse-read.sh needs $tool (apt-get install gcc fio pkg-config curl libfuse-dev)" >&2; exit 2; }
done
pkg-config --exists fuse || { echo "fuse-read.sh needs libfuse-dev" >&2; exit 2; }
[ -f daemon/target/tenplexd.jar ] && [ -f cli/target/tenplex.jar ] || ./mvnw -B -q -DskipTests -pl cli -am package
work=$(mktemp -d /tmp/tenplex-fuse-bench.XXXXXX)
pids=()
cleanup() {
  fusermount -u -z "$work/c" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  fusermount -u -z "$work/t" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -o "$work/memfs" bench/c/memfs.c $(pkg-config fuse --cflags --libs)
head -c $((SIZE_MB << 20)) /dev/urandom > "$work/data"
mkdir -p "$work/c" "$work/t"
"$work/memfs" "$work/data" "$work/c" -f &
pids+=($!)
java -Xms64m -Xmx1g -XX:+UseSerialGC -XX:MaxDirectMemorySize=$((SIZE_MB * 4 + 1024))m -jar daemon/target/tenplexd.jar \
  --port 0 --mount "$work/t" --memory-limit $((SIZE_MB * 3 + 512))m --data-root "$work" >"$work/tenplexd.log" 2>&1 &
pids+=($!)
until grep -q "ready on" "$work/tenplexd.log"; do
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/tenplexd.log"; exit 1; }
  sleep 0.2
done
addr=$(grep -o "ready on http://[^ ]*" "$work/tenplexd.log" | head -1 | sed 's|ready on http://||')
until [ -f "$work/c/data" ]; do sleep 0.1; done
curl -sf -T "$work/data" "http://$addr/api/v1/files/bench/data" >/dev/null
# a dataset over the same bytes: 4 KiB records, two data-parallel ranks; rank 0 reads half of it
java -cp cli/target/tenplex.jar io.tenplex.cli.TenplexCli dataset index --format records:4096 \
  -o "$work/index.txt" "$work/data" 2>/dev/null
java -cp cli/target/tenplex.jar io.tenplex.cli.TenplexCli dataset mount --addr "http://$addr" --job bench \
  --index "$work/index.txt" --global-batch 64 --dp 2 --seed 1 >/dev/null
until curl -sf "http://$addr/api/v1/datasets/bench?wait=60000" | grep -q '"state":"loaded"'; do :; done
ours="$work/t/bench/data"
base="$work/c/data"
part="$work/t/job/bench/dataset/rank-0/samples"
cmp "$ours" "$base"

fiojson() { fio --output-format=json "$@" | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]
print(j["bw_bytes"], j["iops"])'; }
seqread() { fiojson --name=seq --filename="$1" --readonly --rw=read --bs=1M --ioengine=psync --invalidate=1 \
  --size="$(stat -c %s "$1")" --loops=2 | awk '{print $1}'; }
rndread() { fiojson --name=rnd --filename="$1" --readonly --rw=randread --bs=4k --ioengine=psync --invalidate=1 \
  --numjobs=4 --group_reporting --size="$(stat -c %s "$1")" --io_size=64m | awk '{print $2}'; }
# warm-up, not measured: the daemon is long-running, so its read path is compiled before measuring
for f in "$base" "$ours" "$part"; do cat "$f" >/dev/null; done
rndread "$ours" >/dev/null
results="$work/results"
: > "$results"
for r in $(seq 1 "$ROUNDS"); do
  # alternate which file system goes first (order effects on this small machine cancel out)
  if [ $((r % 2)) -eq 1 ]; then order="base ours"; else order="ours base"; fi
  for which in $order; do
    f=$base; [ "$which" = ours ] && f=$ours
    echo "seq_$which $(seqread "$f")" >> "$results"
  done
  for which in $order; do
    f=$base; [ "$which" = ours ] && f=$ours
    echo "rnd_$which $(rndread "$f")" >> "$results"
  done
  echo "part $(seqread "$part")" >> "$results"
  echo "round $r/$ROUNDS done" >&2
done
/usr/bin/python3 - "$results" "$SIZE_MB" "$ROUNDS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    rows.setdefault(k, []).append(float(v))
m = {k: statistics.median(v) for k, v in rows.items()}
print("FUSE reads, %s MiB file, median of %s rounds (fio, psync, page cache dropped before each job)" % (sys.argv[2], sys.argv[3]))
print("sequential bs=1M:       C libfuse %.2f GB/s, tenplex %.2f GB/s, ratio %.2f (target >= 0.9)"
      % (m["seq_base"] / 1e9, m["seq_ours"] / 1e9, m["seq_ours"] / m["seq_base"]))
print("random 4K, 4 readers:   C libfuse %.0fk IOPS, tenplex %.0fk IOPS, ratio %.2f (target >= 0.8)"
      % (m["rnd_base"] / 1e3, m["rnd_ours"] / 1e3, m["rnd_ours"] / m["rnd_base"]))
print("rank partition (dataset/rank-0/samples, %d MiB) sequential: %.2f GB/s (target >= 1 GB/s)"
      % (int(sys.argv[2]) // 2, m["part"] / 1e9))
PY
