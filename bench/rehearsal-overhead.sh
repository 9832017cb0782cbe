#!/usr/bin/env bash
# Benchmark (b): the rehearsal buffer's augmentation overhead on a training step. W tenplexd
# processes on loopback (one per data-parallel rank, started with --peers) and W trainer processes
# (bench/python/rehearsal_step.py) with and without the buffer, rounds interleaved. Every process
# started here is stopped by its PID on exit.
# Usage: bench/rehearsal-overhead.sh [W] [-- more driver options, e.g. --step-list 50,100 --r 16]
# Build first: ./mvnw -B -q -o -DskipTests -pl daemon -am package
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
W=${1:-4}
shift $(( $# < 1 ? $# : 1 )); [ "${1:-}" = "--" ] && shift
source bench/lib/loopback-daemons.sh
start_loopback_daemons "$W" 256m
# in the background, so that a TERM or INT reaches the trap at once (bash runs traps only between commands)
/usr/bin/python3 bench/python/rehearsal_step.py --daemons "$peers" "$@" &
driver=$!
pids=("$driver" "${pids[@]}")
wait "$driver"
