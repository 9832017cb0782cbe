#!/usr/bin/env bash
# NetCDF classic rows through a dataset mount against netCDF4: bench/array-read.sh netcdf (its header says what it measures).
# Usage: bench/netcdf-read.sh [rows, default 16384] [floats per row, default 1024] [rounds, default 3]
exec "$(dirname "${BASH_SOURCE[0]}")/array-read.sh" netcdf "$@"
