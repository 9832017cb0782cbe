"""Writes HDF5 and NetCDF-4 test files with h5py and netCDF4, and what those libraries read back.

usage: make_arrays.py OUTDIR

OUTDIR/arrays.h5 and OUTDIR/vars.nc hold arrays of several dtypes and layouts (contiguous, chunked
with gzip, with shuffle and gzip, chunks that split inner dimensions, chunks never written, big
endian); OUTDIR/bad/ holds files a daemon must refuse. For every array, OUTDIR/expect/<id>.bin is
its bytes as the library reads them (C order, the dtype as stored), and OUTDIR/manifest.json lists
{id, url, rows, rowBytes, dtype, shape}.
"""
import json
import os
import sys

import h5py
import netCDF4
import numpy as np


def h5_arrays(path):
    rng = np.random.default_rng(7)
    out = []
    with h5py.File(path, "w") as f:
        def add(name, data, **kw):
            f.create_dataset(name, data=data, **kw)
            out.append(name)
        add("/contig_f32", rng.standard_normal((37, 5)).astype("<f4"))
        add("/gzip_f64", rng.standard_normal((101, 3, 4)), chunks=(8, 3, 4), compression="gzip", compression_opts=4)
        add("/shuf_i64", rng.integers(-2**62, 2**62, size=53, dtype="<i8"), chunks=(10,), shuffle=True,
            compression="gzip")
        add("/grp/u8", rng.integers(0, 256, size=(99, 7, 3), dtype="u1"), chunks=(16, 7, 3), shuffle=True,
            compression="gzip", compression_opts=9)
        add("/inner_chunks", rng.standard_normal((45, 6)).astype("<f4"), chunks=(7, 4), compression="gzip")
        add("/be_i16", rng.integers(-3000, 3000, size=(21, 3)).astype(">i2"))
        add("/fletcher_f32", rng.standard_normal((19, 2)).astype("<f4"), chunks=(5, 2), fletcher32=True,
            shuffle=True, compression="gzip")
        partial = f.create_dataset("/partial", shape=(50, 2), dtype="<i4", chunks=(8, 2), fillvalue=-7,
                                   compression="gzip")
        partial[0:20] = np.arange(40, dtype="<i4").reshape(20, 2)
        out.append("/partial")
    return out


def nc_vars(path):
    rng = np.random.default_rng(11)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as d:
        d.createDimension("time", 29)
        d.createDimension("lat", 4)
        d.createDimension("lon", 5)
        t = d.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, complevel=5, shuffle=True)
        t[:] = rng.standard_normal((29, 4, 5)).astype("f4")
        c = d.createVariable("counts", "i8", ("time",))
        c[:] = rng.integers(0, 10**12, size=29)
        g = d.createGroup("grp")
        v = g.createVariable("pix", "u1", ("time", "lon"), zlib=True)
        v[:] = rng.integers(0, 256, size=(29, 5), dtype="u1")
    return ["temp", "counts", "grp/pix"]


def expect(out, ident, url, data):
    data = np.ascontiguousarray(data)
    with open(os.path.join(out, "expect", ident + ".bin"), "wb") as f:
        f.write(data.tobytes())
    rows = data.shape[0]
    return {"id": ident, "url": url, "rows": rows, "rowBytes": data.nbytes // rows if rows else 0,
            "dtype": data.dtype.str, "shape": list(data.shape)}


def bad_files(out, h5):
    bad = os.path.join(out, "bad")
    os.makedirs(bad, exist_ok=True)
    with open(h5, "rb") as f:
        whole = f.read()
    with open(os.path.join(bad, "truncated.h5"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    with open(os.path.join(bad, "notes.h5"), "w") as f:
        f.write("these are not the arrays you are looking for\n")
    with h5py.File(os.path.join(bad, "scaleoffset.h5"), "w") as f:
        f.create_dataset("x", data=np.arange(64, dtype="<i4").reshape(16, 4), chunks=(4, 4), scaleoffset=0)
    # served as netcdf:///.../classic.nc#v (tests/python/make_classic.py has more), refused as hdf5: or without "v"
    with netCDF4.Dataset(os.path.join(bad, "classic.nc"), "w", format="NETCDF3_CLASSIC") as d:
        d.createDimension("t", 3)
        d.createVariable("v", "f4", ("t",))[:] = [1, 2, 3]


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(os.path.join(out, "expect"), exist_ok=True)
    h5 = os.path.join(out, "arrays.h5")
    nc = os.path.join(out, "vars.nc")
    names = h5_arrays(h5)
    variables = nc_vars(nc)
    manifest = []
    with h5py.File(h5, "r") as f:
        for n in names:
            manifest.append(expect(out, "h5" + n.replace("/", "_"), "hdf5://" + h5 + "#" + n, f[n][...]))
    with netCDF4.Dataset(nc, "r") as d:
        d.set_auto_maskandscale(False)
        for v in variables:
            manifest.append(expect(out, "nc_" + v.replace("/", "_"), "netcdf://" + nc + "#" + v, d[v][...]))
    bad_files(out, h5)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
