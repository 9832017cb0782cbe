"""Reads every rank of a mounted HDF5 dataset or NetCDF variable (NetCDF-4 or classic) through the FUSE
view and checks each sample, bit for bit, against the row h5py or netCDF4 reads from the file itself
(for a classic file, big-endian as the file stores it). An ADIOS2 variable (no ADIOS2 Python module
here) is checked against the raw dump ADIOS2's own reader wrote of it, given with its dtype and row shape.

Usage: check_array_mount.py <mount> <job> <dp size> <url> [<dump> <dtype> <row shape>], the url as
mounted (hdf5:///<file>#<dataset>, netcdf:///<file>#<variable>, adios2:///<dir.bp>#<variable>; the
last with the dump, a numpy dtype such as <f4 and the row's shape as comma-separated sizes, empty for a
1-D variable). Prints JSON {rank: samples checked} and exits non-zero on the first difference.
"""
import json
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/clients/python")
import tenplex  # noqa: E402

mount, job, n, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
kind, rest = url.split(":", 1)
path, name = "/" + rest.lstrip("/").split("#", 1)[0], rest.split("#", 1)[1]

if kind == "adios2":
    dump, dtype, row = sys.argv[5], sys.argv[6], sys.argv[7]
    data = np.fromfile(dump, dtype=np.dtype(dtype)).reshape((-1,) + tuple(int(d) for d in row.split(",") if d))
elif kind == "hdf5":
    import h5py
    f = h5py.File(path, "r")
    data = f[name][...]
else:
    import netCDF4
    f = netCDF4.Dataset(path, "r")
    f.set_auto_maskandscale(False)
    data = np.asarray(f[name][...])
    if f.data_model.startswith("NETCDF3"):  # a classic file stores big-endian values: served as stored
        data = data.astype(data.dtype.newbyteorder(">"))
data = np.ascontiguousarray(data)

checked = {}
for r in range(n):
    reader = tenplex.RankReader(mount, job, r, decode=lambda b: np.frombuffer(b, dtype=data.dtype).reshape(data.shape[1:]))
    ids = reader.ids()
    got = [s for batch in reader for s in batch]
    assert len(got) == len(ids), (r, len(got), len(ids))
    for i, s in zip(ids, got):
        # data[i:i + 1], not data[i]: a row of a 1-D array is a scalar, whose bytes are in native order
        assert s.tobytes() == data[i:i + 1].tobytes(), "rank %d sample %d differs from the library's row" % (r, i)
    checked[r] = len(ids)
print(json.dumps(checked))
