"""2000 tensors of 4 KiB through tenplex.upload (one tar archive of 4000 members) against one PUT of the
same 8 MB as one tensor, alternating, against the daemon at TENPLEX_ADDR; prints the medians and
their ratio (issue 41 item 3's small-upload figure, without bench/python-wire.sh's 2 GB cases).
TENPLEX_CLIENT: the client directory to import (another checkout's, for a before/after comparison).
TENPLEX_SMALL_TORCH=1: the 2000 tensors are torch tensors (a state_dict's), not numpy arrays.

    bin/tenplexd --port 7070 & TENPLEX_ADDR=http://127.0.0.1:7070 /usr/bin/python3 bench/python/small_upload.py
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("TENPLEX_CLIENT", os.path.join(HERE, "..", "..", "clients", "python")))

import numpy as np  # noqa: E402
import requests  # noqa: E402
import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
small = {"t%04d" % i: np.full(1024, i, dtype=np.float32) for i in range(2000)}
flat = np.concatenate(list(small.values()))
if os.environ.get("TENPLEX_SMALL_TORCH") == "1":
    import torch  # noqa: E402
    small = {k: torch.from_numpy(v) for k, v in small.items()}
session = requests.Session()


def one_put():
    r = session.put(ADDR + "/api/v1/tensors/bench/small-one", data=memoryview(flat).cast("B"),
                    params={"dtype": "f32", "dims": str(flat.size), "replace": "true"},
                    headers={"Content-Type": "application/octet-stream"})
    r.raise_for_status()


def upload():
    tenplex.upload(small, "/bench/small", client=c)


def main(rounds=15, warm=5):
    for _ in range(warm):
        upload()
        one_put()
    ours, one = [], []
    for _ in range(rounds):
        for f, into in ((upload, ours), (one_put, one)):
            t = time.perf_counter()
            f()
            into.append(time.perf_counter() - t)
    m, o = sorted(ours)[rounds // 2], sorted(one)[rounds // 2]
    print("2000 x 4 KiB%s: upload %.1f ms, one PUT %.1f ms, ratio %.3f"
          % (" (torch)" if os.environ.get("TENPLEX_SMALL_TORCH") == "1" else "", m * 1e3, o * 1e3, o / m))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
