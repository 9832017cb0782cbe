#!/usr/bin/env bash
# HDF5 rows through a dataset mount against h5py: bench/array-read.sh hdf5 (its header says what it measures).
# Usage: bench/hdf5-read.sh [rows, default 32768] [floats per row, default 1024] [rounds, default 3]
exec "$(dirname "${BASH_SOURCE[0]}")/array-read.sh" hdf5 "$@"
