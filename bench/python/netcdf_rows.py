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
import json
import statistics
import sys
import time

import netCDF4
import numpy as np

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0] + "/clients/python")
import tenplex  # noqa: E402


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


def timed(fn):
    t = time.perf_counter()
    n = fn()
    return time.perf_counter() - t, n


def read(mount, job, path, name, rounds):
    reader = tenplex.RankReader(mount, job, 0)
    g = reader.info["globalBatch"]
    ids = np.asarray(reader.ids())
    batches = [ids[i:i + g] for i in range(0, len(ids), g)]
    f = netCDF4.Dataset(path, "r")
    f.set_auto_maskandscale(False)
    var = f[name]
    dtype, shape = np.dtype(var.dtype).newbyteorder(">"), var.shape[1:]

    def via_mount():
        n = 0
        for batch in tenplex.RankReader(mount, job, 0, decode=lambda b: np.frombuffer(b, dtype).reshape(shape)):
            n += len(np.stack(batch))
        return n

    def via_netcdf4_batches():
        n = 0
        for b in batches:
            order = np.argsort(b)
            rows = var[b[order]]
            out = np.empty_like(rows)
            out[order] = rows
            n += len(out)
        return n

    def via_netcdf4_rows():
        return sum(len(var[int(i)][None]) for i in ids)

    got = [s for batch in tenplex.RankReader(mount, job, 0) for s in batch]
    for i, s in zip(ids, got):
        assert s == var[int(i):int(i) + 1].astype(dtype).tobytes(), "row %d differs" % i
    ways = {"mount": via_mount, "netcdf4_batches": via_netcdf4_batches, "netcdf4_rows": via_netcdf4_rows}
    times = {k: [] for k in ways}
    for r in range(rounds):
        names = list(ways) if r % 2 == 0 else list(reversed(ways))
        for k in names:
            t, n = timed(ways[k])
            assert n == len(ids), (k, n)
            times[k].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    row_bytes = dtype.itemsize * int(np.prod(shape))
    print(json.dumps({"variable": name, "rows": len(ids), "rowBytes": row_bytes, "rounds": rounds,
                      "seconds": med, "rowsPerSecond": {k: len(ids) / v for k, v in med.items()}}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
