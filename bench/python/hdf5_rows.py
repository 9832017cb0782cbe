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
import sys

import h5py
import numpy as np

from array_rows import compare  # noqa: E402 (bench/python, beside this file)


def make(path, rows, width):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((rows, width), dtype=np.float32)
    with h5py.File(path, "w") as f:
        f.create_dataset("contig", data=data)
        f.create_dataset("gzip", data=data, chunks=(64, width), shuffle=True, compression="gzip",
                         compression_opts=4)


def read(mount, job, path, name, rounds):
    f = h5py.File(path, "r")
    ds = f[name]
    compare(mount, job, rounds, "h5py", ds.dtype, ds.shape[1:], lambda ids: ds[ids], lambda i: ds[i],
            lambda i: ds[i].tobytes(), "dataset", name)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
