#!/usr/bin/env bash
# The Python client's REST path (save, load, 2000 small tensors) against one large request of the
# same bytes, side by side (bench/python/wire_speed.py), against a real tenplexd started by
# bin/tenplexd. Usage: bench/python-wire.sh [rounds] [state GB] (TENPLEX_CLIENT: another client dir;
# WIRE_NO_CRC32C=1: without the crc32c package, as the client is where only crcmod is installed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
gb="${2:-2}"
# shellcheck source=bench/lib/loopback-daemons.sh
. bench/lib/loopback-daemons.sh
# room for the state, its replacement while it is uploaded again, and the single tensor
start_loopback_daemons 1 "$(/usr/bin/python3 -c "print(int($gb * 3.5 + 1) * 1024)")m"
TENPLEX_ADDR="http://${peers#0=}" /usr/bin/python3 bench/python/wire_speed.py "${1:-3}" "$gb"
