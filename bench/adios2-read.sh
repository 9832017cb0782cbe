#!/usr/bin/env bash
# ADIOS2 rows (BP5 and BP4) through a dataset mount against ADIOS2's own reader: bench/array-read.sh adios2 (its header says what it measures).
# Usage: bench/adios2-read.sh [rows, default 16384] [floats per row, default 1024] [rounds, default 3]
exec "$(dirname "${BASH_SOURCE[0]}")/array-read.sh" adios2 "$@"
