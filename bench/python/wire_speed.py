"""The Python client's REST path against one large request of the same bytes, side by side, against a
daemon (TENPLEX_ADDR). Usage: wire_speed.py [rounds] [state GB]

* save: ``tenplex.upload`` of a state of odd-sized f32 tensors (``state GB`` in all, 2 by default) vs
  one PUT of a single tensor of the same bytes from one buffer;
* load: ``tenplex.download`` of that state (every body checked against the CRC32C the daemon sends)
  vs one GET of the single tensor streamed into a preallocated buffer (the wire alone: unchecked, read
  straight into the buffer; ``WIRE_URLLIB3_READ=1``: through urllib3's ``readinto``, which copies);
* small: ``tenplex.upload`` of 2000 tensors of 4 KiB vs one PUT of their bytes as one tensor.

Rounds alternate ours and the single request; medians and the ratio (ours / single) are printed, with
the CRC32C implementation in use and its rate (WIRE_NO_CRC32C=1 hides the ``crc32c`` package, to
measure the next implementation the client falls back to). The client comes from TENPLEX_CLIENT
(default: this checkout's)."""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("WIRE_NO_CRC32C") == "1":  # and no ISA-L: the next implementation after both
    os.environ["TENPLEX_NO_ISAL"] = "1"
    sys.modules["crc32c"] = None  # an import of it raises ImportError
sys.path.insert(0, os.environ.get("TENPLEX_CLIENT") or os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import requests  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import crc32c  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"].rstrip("/")
if "://" not in ADDR:
    ADDR = "http://" + ADDR


# the single GET reads with http.client's readinto, straight into its buffer (urllib3's readinto makes a
# bytes object of each read first); WIRE_URLLIB3_READ=1: with urllib3's, as a plain requests user would
RAW_FP = os.environ.get("WIRE_URLLIB3_READ") != "1"


def single_put(session, path, buf):
    r = session.put(ADDR + "/api/v1/tensors" + path, params={"dtype": "uint8", "dims": str(len(buf)),
                                                            "replace": "true"}, data=memoryview(buf))
    assert r.status_code in (200, 201), r.text


def single_get(session, path, out):
    r = session.get(ADDR + "/api/v1/tensors" + path, stream=True)
    assert r.status_code == 200, r.text
    view, got = memoryview(out), 0  # the raw wire: no checksum, no tree, straight into the buffer
    read = r.raw._fp.readinto if RAW_FP else r.raw.readinto
    while got < len(view):
        n = read(view[got:])
        assert n, "short body"
        got += n
    r.close()


def timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def crc_rate():
    buf = np.random.default_rng(3).integers(0, 255, 256 << 20, dtype=np.uint8)
    t = min(timed(lambda: crc32c.crc32c(memoryview(buf))) for _ in range(3))
    return len(buf) / t / 1e9


def state_of(gb):
    rng = np.random.default_rng(1)
    shape = (4099, 8191)  # 134 MB of f32, odd in both dimensions
    n = max(1, int(round(gb * 1e9 / (shape[0] * shape[1] * 4))))
    return {"w%02d" % i: rng.standard_normal(shape, dtype=np.float32) for i in range(n)}


def compare(name, rounds, ours, single, nbytes):
    a, b = [], []
    for _ in range(rounds + 1):  # the first round warms up (and is not counted)
        a.append(timed(ours))
        b.append(timed(single))
    ra, rb = nbytes / statistics.median(a[1:]) / 1e9, nbytes / statistics.median(b[1:]) / 1e9
    print("| %s | %.0f MB | %.2f GB/s | %.2f GB/s | **%.2f** |" % (name, nbytes / 1e6, ra, rb, ra / rb))
    return ra / rb


def main(rounds, gb):
    c = tenplex.Client(ADDR)
    s = requests.Session()
    print("CRC32C: %s, %.2f GB/s on 256 MiB" % (crc32c.IMPLEMENTATION, crc_rate()))
    print("| case | bytes | tenplex client | one request | ratio |\n|---|---|---|---|---|")
    state = state_of(gb)
    total = sum(a.nbytes for a in state.values())
    flat = np.empty(total, dtype=np.uint8)
    compare("save (upload)", rounds, lambda: tenplex.upload(state, "/bench/wire/state", client=c),
            lambda: single_put(s, "/bench/wire/one", flat), total)
    back = {}
    compare("load (download)", rounds, lambda: back.update(tenplex.download("/bench/wire/state", client=c,
                                                                              as_torch=False)),
            lambda: single_get(s, "/bench/wire/one", flat), total)
    assert all(np.array_equal(back[k], state[k]) for k in state), "a tensor read back differs"
    del back, flat, state
    small = {"t%04d" % i: np.full(1024, i, dtype=np.float32) for i in range(2000)}
    sbytes = sum(a.nbytes for a in small.values())
    sflat = np.empty(sbytes, dtype=np.uint8)
    compare("2000 x 4 KiB (upload)", rounds * 3, lambda: tenplex.upload(small, "/bench/wire/small", client=c),
            lambda: single_put(s, "/bench/wire/smallone", sflat), sbytes)
    for p in ("/bench/wire",):
        requests.delete(ADDR + "/api/v1/dirs" + p, params={"recursive": "true"})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, float(sys.argv[2]) if len(sys.argv) > 2 else 2.0)
