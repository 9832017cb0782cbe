"""Times tenplex.upload of a many-tensor state against a daemon (TENPLEX_ADDR): 2000 small f32
tensors (16 KiB each) and 6 large odd-sized ones (f32 [4099, 2047], 32 MiB each), ~224 MiB in all,
re-saved over the same prefix as a checkpoint is. Prints the median rate of ``rounds`` uploads.
The client comes from TENPLEX_CLIENT (a clients/python directory; default: this checkout's)."""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("TENPLEX_CLIENT") or os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402


def main(rounds):
    rng = np.random.default_rng(1)
    state = {"small": {"t%04d" % i: rng.standard_normal(4096).astype(np.float32) for i in range(2000)},
             "large": {"w%d" % i: rng.standard_normal((4099, 2047)).astype(np.float32) for i in range(6)}}
    total = sum(a.nbytes for d in state.values() for a in d.values())
    c = tenplex.Client(os.environ["TENPLEX_ADDR"])
    rates = []
    for _ in range(rounds + 1):  # the first round warms up
        start = time.perf_counter()
        tenplex.upload(state, "/bench/py/state", client=c)
        rates.append(total / (time.perf_counter() - start) / 1e9)
    back = tenplex.download("/bench/py/state", client=c, as_torch=False)
    assert np.array_equal(back["large"]["w5"], state["large"]["w5"])
    print("python upload of %d tensors, %.0f MiB: %.2f GB/s (median of %d; runs %s)"
          % (2006, total / 2**20, statistics.median(rates[1:]), rounds, " ".join("%.2f" % r for r in rates[1:])))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
