"""HDF5 rows read through a tenplex dataset mount against h5py reading the same rows directly.

usage: hdf5_rows.py make FILE ROWS ROW_FLOATS
       hdf5_rows.py read MOUNT JOB FILE DATASET ROUNDS

make writes FILE with two float32 datasets of ROWS rows of ROW_FLOATS values: /contig (contiguous)
and /gzip (chunks of 64 rows, shuffle + gzip level 4). read takes rank 0's rows of JOB (mounted
from FILE#DATASET, one rank) in the mount's order, batch by batch, and reads them ROUNDS times each
way, alternating which goes first: (a) the mount: each batch's bytes from
dataset/rank-0/samples through FUSE (tenplex.RankReader, numpy arrays); (b) h5py, each batch as one
fancy-indexed read of its sorted row ids (h5py needs increasing ids), then put back in batch order;
(c) h5py, row by row (ds[i]). Every row read through the mount is checked against h5py once.
Prints JSON with the median seconds and rows/s of each.
"""
import json
import statistics
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0] + "/clients/python")
import tenplex  # noqa: E402


def make(path, rows, width):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((rows, width), dtype=np.float32)
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", data=data)
        f.create_dataset("gzip", data=data, chunks=(64, width), shuffle=True, compression="gzip",
                         compression_opts=4)


def timed(fn):
    t = time.perf_counter()
    n = fn()
    return time.perf_counter() - t, n


def read(mount, job, path, name, rounds):
    reader = tenplex.RankReader(mount, job, 0)
    g = reader.info["globalBatch"]
    ids = np.asarray(reader.ids())
    batches = [ids[i:i + g] for i in range(0, len(ids), g)]
    f = h5py.File(path, "r")
    ds = f[name]
    dtype, shape = ds.dtype, ds.shape[1:]

    def via_mount():
        n = 0
        for batch in tenplex.RankReader(mount, job, 0, decode=lambda b: np.frombuffer(b, dtype).reshape(shape)):
            n += len(np.stack(batch))
        return n

    def via_h5py_batches():
        n = 0
        for b in batches:
            order = np.argsort(b)
            rows = ds[b[order]]
            out = np.empty_like(rows)
            out[order] = rows
            n += len(out)
        return n

    def via_h5py_rows():
        return sum(len(ds[int(i)][None]) for i in ids)

    got = [s for batch in tenplex.RankReader(mount, job, 0) for s in batch]
    for i, s in zip(ids, got):
        assert s == ds[int(i)].tobytes(), "row %d differs" % i
    ways = {"mount": via_mount, "h5py_batches": via_h5py_batches, "h5py_rows": via_h5py_rows}
    times = {k: [] for k in ways}
    for r in range(rounds):
        names = list(ways) if r % 2 == 0 else list(reversed(ways))
        for k in names:
            t, n = timed(ways[k])
            assert n == len(ids), (k, n)
            times[k].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    row_bytes = ds.dtype.itemsize * int(np.prod(shape))
    print(json.dumps({"dataset": name, "rows": len(ids), "rowBytes": row_bytes, "rounds": rounds,
                      "seconds": med, "rowsPerSecond": {k: len(ids) / v for k, v in med.items()}}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
