"""Where the time of a small-tensor upload goes: 2000 torch tensors of 4 KiB (a flat state_dict) through
the client's phases one at a time (flatten, prepare, split, building the compact batch, posting a batch
built beforehand), against one PUT of the same 8 MB; medians of 30 each, against the daemon at
TENPLEX_ADDR. TENPLEX_CLIENT: the client directory to import (another checkout's).

    bin/tenplexd --port 7070 & TENPLEX_ADDR=http://127.0.0.1:7070 /usr/bin/python3 bench/python/small_upload_phases.py
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("TENPLEX_CLIENT", os.path.join(HERE, "..", "..", "clients", "python")))

import numpy as np  # noqa: E402
import requests  # noqa: E402
import tenplex  # noqa: E402
import torch  # noqa: E402
from tenplex.wire import batched_upload, compact_batch, tree_codec  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]


def median_ms(fn, n=30):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[n // 2] * 1e3


def main():
    c = tenplex.Client(ADDR)
    state = {"t%04d" % i: torch.from_numpy(np.full(1024, i, dtype=np.float32)) for i in range(2000)}
    entries = tree_codec.flatten(state, False)
    leaves = batched_upload.prepare(entries)
    archives, _ = batched_upload.split(leaves)
    built = [None]

    def build():
        built[0] = None  # the last batch's memory goes first, as between two saves
        built[0] = compact_batch.Batch(archives[0])

    flat = np.concatenate([t.numpy() for t in state.values()])
    session = requests.Session()

    def one_put():
        session.put(ADDR + "/api/v1/tensors/bench/small-one", data=memoryview(flat).cast("B"),
                    params={"dtype": "f32", "dims": str(flat.size), "replace": "true"},
                    headers={"Content-Type": "application/octet-stream"}).raise_for_status()

    phases = [
        ("flatten", lambda: tree_codec.flatten(state, False)),
        ("prepare", lambda: batched_upload.prepare(entries)),
        ("split", lambda: batched_upload.split(leaves)),
        ("batch", build),
        ("post (built)", lambda: compact_batch.post(c, "/bench/small/", built[0], True)),
        ("upload (all)", lambda: tenplex.upload(state, "/bench/small", client=c)),
        ("one PUT", one_put),
    ]
    build()
    print(", ".join("%s %.2f ms" % (name, median_ms(fn)) for name, fn in phases))


if __name__ == "__main__":
    main()
