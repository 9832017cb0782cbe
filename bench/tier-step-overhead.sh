#!/usr/bin/env bash
# Step-time overhead of checkpoint tiers on a running job: W tenplexd processes on loopback (one per
# rank, started with --peers) and W torch trainer processes (bench/python/tier_step.py), cases no
# tiers, L2 (partners 1) and L3 (groups of k, 1 parity block) side by side. Every process started
# here is stopped by its PID on exit.
# Usage: bench/tier-step-overhead.sh [W] [MiB per rank] [steps] [save every K] [rounds] [-- more driver options]
# Build first: ./mvnw -B -q -o -DskipTests -pl daemon,bench -am package
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
W=${1:-4}; MIB=${2:-64}; STEPS=${3:-40}; EVERY=${4:-10}; ROUNDS=${5:-2}
shift $(( $# < 5 ? $# : 5 )); [ "${1:-}" = "--" ] && shift
source bench/lib/loopback-daemons.sh
start_loopback_daemons "$W" 2g
# in the background, so that a TERM or INT reaches the trap at once (bash runs traps only between commands)
/usr/bin/python3 bench/python/tier_step.py --daemons "$peers" --mib "$MIB" --steps "$STEPS" --every "$EVERY" \
  --rounds "$ROUNDS" --tmp "$tmp" "$@" &
driver=$!
pids=("$driver" "${pids[@]}")
wait "$driver"
