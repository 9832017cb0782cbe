"""What bench/python/hdf5_rows.py and netcdf_rows.py share: rank 0's rows of a mounted array read
through the mount and by the format's own library, side by side.

``compare`` takes the array's rows as the library reads them (``rows(sorted ids)`` one read per
batch, ``row(i)`` one row), checks every row read through the mount against ``expect(i)`` once,
then reads all rows ROUNDS times each way, alternating which goes first, and prints JSON with the
median seconds and rows/s of each way."""
import json
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0] + "/clients/python")
import tenplex  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    n = fn()
    return time.perf_counter() - t, n


def compare(mount, job, rounds, lib, dtype, shape, rows, row, expect, name_key, name):
    reader = tenplex.RankReader(mount, job, 0)
    g = reader.info["globalBatch"]
    ids = np.asarray(reader.ids())
    batches = [ids[i:i + g] for i in range(0, len(ids), g)]

    def via_mount():
        n = 0
        for batch in tenplex.RankReader(mount, job, 0, decode=lambda b: np.frombuffer(b, dtype).reshape(shape)):
            n += len(np.stack(batch))
        return n

    def via_batches():  # the library wants increasing ids: read sorted, put back in batch order
        n = 0
        for b in batches:
            order = np.argsort(b)
            got = rows(b[order])
            out = np.empty_like(got)
            out[order] = got
            n += len(out)
        return n

    def via_rows():
        return sum(len(row(int(i))[None]) for i in ids)

    got = [s for batch in tenplex.RankReader(mount, job, 0) for s in batch]
    for i, s in zip(ids, got):
        assert s == expect(int(i)), "row %d differs" % i
    ways = {"mount": via_mount, lib + "_batches": via_batches, lib + "_rows": via_rows}
    times = {k: [] for k in ways}
    for r in range(rounds):
        for k in (list(ways) if r % 2 == 0 else list(reversed(ways))):
            t, n = timed(ways[k])
            assert n == len(ids), (k, n)
            times[k].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    row_bytes = np.dtype(dtype).itemsize * int(np.prod(shape))
    print(json.dumps({name_key: name, "rows": len(ids), "rowBytes": row_bytes, "rounds": rounds,
                      "seconds": med, "rowsPerSecond": {k: len(ids) / v for k, v in med.items()}}))
