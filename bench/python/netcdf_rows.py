"""NetCDF classic rows read through a tenplex dataset mount against netCDF4 reading the same rows directly.

usage: netcdf_rows.py make FILE ROWS ROW_FLOATS
       netcdf_rows.py read MOUNT JOB FILE VARIABLE ROUNDS

make writes FILE as CDF-5 (NETCDF3_64BIT_DATA, PnetCDF's large-variable format) with ROWS rows of
ROW_FLOATS float32 values twice: "fixed" (a fixed-size variable, its rows contiguous) and "rec" (a
record variable, interleaved record by record with a second record variable "side" of 16 bytes
per record). read takes rank 0's rows of JOB (mounted from FILE#VARIABLE, one rank) in the mount's
order, batch by batch, and reads them ROUNDS times each way, alternating which goes first: (a) the
mount: each batch's bytes from dataset/rank-0/samples through FUSE (tenplex.RankReader, numpy
arrays); (b) netCDF4, each batch as one read of its sorted row ids (an integer-sequence index), then
put back in batch order; (c) netCDF4, row by row (var[i]). Every row read through the mount is
checked against netCDF4 once (big-endian, as the file stores it). Prints JSON with the median
seconds and rows/s of each.
"""
import sys

import netCDF4
import numpy as np

from array_rows import compare  # noqa: E402 (bench/python, beside this file)


def make(path, rows, width):
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as d:
        d.createDimension("time", None)
        d.createDimension("row", rows)
        d.createDimension("w", width)
        d.createDimension("s", 4)
        fixed = d.createVariable("fixed", "f4", ("row", "w"))
        rec = d.createVariable("rec", "f4", ("time", "w"))
        side = d.createVariable("side", "i4", ("time", "s"))
        for i in range(0, rows, 4096):
            n = min(4096, rows - i)
            data = rng.standard_normal((n, width), dtype=np.float32)
            fixed[i:i + n] = data
            rec[i:i + n] = data
            side[i:i + n] = np.arange(4 * n, dtype="i4").reshape(n, 4)


def read(mount, job, path, name, rounds):
    f = netCDF4.Dataset(path, "r")
    f.set_auto_maskandscale(False)
    var = f[name]
    dtype = np.dtype(var.dtype).newbyteorder(">")  # served as stored: big-endian
    compare(mount, job, rounds, "netcdf4", dtype, var.shape[1:], lambda ids: var[ids], lambda i: var[i],
            lambda i: var[i:i + 1].astype(dtype).tobytes(), "variable", name)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
