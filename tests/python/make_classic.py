"""Writes NetCDF classic test files with netCDF4 (CDF-1, CDF-2 and CDF-5) and what netCDF4 reads back.

usage: make_classic.py OUTDIR

For each format (NETCDF3_CLASSIC, NETCDF3_64BIT_OFFSET, NETCDF3_64BIT_DATA), OUTDIR/<fmt>.nc holds
fixed-size variables (odd row counts, several dtypes, one partly written so the rest reads as its
_FillValue) and record variables (unlimited first dimension, interleaved record by record, one
written for fewer records than the file has) and OUTDIR/<fmt>-lone.nc a lone record variable of
bytes (records not padded). CDF-5 adds its unsigned and 64-bit types. OUTDIR/expect/<id>.bin is
each variable's bytes as netCDF4 reads them (set_auto_maskandscale(False)), big-endian as stored,
and OUTDIR/manifest.json lists {id, url, rows, rowBytes, dtype, shape, format, record}.
"""
import json
import os
import sys

import netCDF4
import numpy as np

FORMATS = {"cdf1": "NETCDF3_CLASSIC", "cdf2": "NETCDF3_64BIT_OFFSET", "cdf5": "NETCDF3_64BIT_DATA"}


def write(path, fmt, rng):
    """Writes one file; returns the names of its variables."""
    names = []
    with netCDF4.Dataset(path, "w", format=fmt) as d:
        d.title = "tenplex classic test"
        d.createDimension("time", None)
        d.createDimension("row", 37)
        d.createDimension("odd", 11)
        d.createDimension("lat", 3)
        d.createDimension("lon", 5)

        def var(name, dtype, dims, data, **kw):
            v = d.createVariable(name, dtype, dims, **kw)
            v[:] = data
            names.append(name)
            return v
        var("fix_f4", "f4", ("row", "lat", "lon"), rng.standard_normal((37, 3, 5)).astype("f4"))
        var("fix_i2", "i2", ("odd", "lat"), rng.integers(-30000, 30000, size=(11, 3)).astype("i2"))
        var("fix_i1", "i1", ("odd",), rng.integers(-128, 128, size=11).astype("i1"))
        var("fix_f8", "f8", ("odd", "lon"), rng.standard_normal((11, 5)))
        part = d.createVariable("fix_fill", "i4", ("row", "lat"), fill_value=-99)
        part[0:20] = rng.integers(-2**31, 2**31, size=(20, 3)).astype("i4")
        names.append("fix_fill")
        # record variables, interleaved record by record
        d.createVariable("rec_f4", "f4", ("time", "lat", "lon"))
        d.createVariable("rec_i2", "i2", ("time", "lat"))  # 6 bytes per record: padded to 8
        d.createVariable("rec_i1", "i1", ("time",))  # 1 byte per record: padded to 4
        d.createVariable("rec_fill", "f8", ("time", "lon"), fill_value=-1.5)
        d["rec_f4"][0:23] = rng.standard_normal((23, 3, 5)).astype("f4")
        d["rec_i2"][0:23] = rng.integers(-30000, 30000, size=(23, 3)).astype("i2")
        d["rec_i1"][0:23] = rng.integers(-128, 128, size=23).astype("i1")
        d["rec_fill"][0:9] = rng.standard_normal((9, 5))
        names += ["rec_f4", "rec_i2", "rec_i1", "rec_fill"]
        if fmt == "NETCDF3_64BIT_DATA":
            var("fix_u8", "u8", ("odd", "lat"), rng.integers(0, 2**64, size=(11, 3), dtype="u8"))
            var("fix_i8", "i8", ("row",), rng.integers(-2**63, 2**63, size=37, dtype="i8"))
            var("fix_u1", "u1", ("odd", "lon"), rng.integers(0, 256, size=(11, 5), dtype="u1"))
            var("fix_u2", "u2", ("row", "lat"), rng.integers(0, 2**16, size=(37, 3), dtype="u2"))
            var("fix_u4", "u4", ("odd",), rng.integers(0, 2**32, size=11, dtype="u4"))
            for name, dt, dims, shape in (("rec_u2", "u2", ("time", "lon"), (23, 5)), ("rec_u4", "u4", ("time",), (23,)),
                                          ("rec_i8", "i8", ("time", "lat"), (23, 3)), ("rec_u8", "u8", ("time",), (23,))):
                info = np.iinfo(dt)
                var(name, dt, dims, rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True))
    return names


def write_lone(path, fmt, rng):
    with netCDF4.Dataset(path, "w", format=fmt) as d:
        d.createDimension("time", None)
        d.createDimension("w", 3)
        d.createVariable("lone_i1", "i1", ("time", "w"))[0:21] = rng.integers(-128, 128, size=(21, 3)).astype("i1")
    return ["lone_i1"]


def expect(out, ident, url, data, fmt, record):
    data = np.ascontiguousarray(np.asarray(data))
    data = data.astype(data.dtype.newbyteorder(">"))  # as stored in the file
    with open(os.path.join(out, "expect", ident + ".bin"), "wb") as f:
        f.write(data.tobytes())
    rows = data.shape[0]
    return {"id": ident, "url": url, "rows": rows, "rowBytes": data.nbytes // rows if rows else 0,
            "dtype": data.dtype.str, "shape": list(data.shape), "format": fmt, "record": record}


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(os.path.join(out, "expect"), exist_ok=True)
    rng = np.random.default_rng(5)
    manifest = []
    for short, fmt in FORMATS.items():
        for suffix, writer in (("", write), ("-lone", write_lone)):
            path = os.path.join(out, short + suffix + ".nc")
            names = writer(path, fmt, rng)
            with netCDF4.Dataset(path, "r") as d:
                d.set_auto_maskandscale(False)
                assert d.data_model == fmt, (path, d.data_model)
                for n in names:
                    v = d[n]
                    record = v.dimensions[0] == "time"
                    manifest.append(expect(out, short + "_" + n, "netcdf://" + path + "#" + n, v[:], fmt, record))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
