"""A producer or trainer process of the streamed-sample tests (run by test_streams.py).

    stream_worker.py produce JOB ADDR FIRST COUNT [CLOSE]   pushes samples FIRST..FIRST+COUNT-1
        (8 bytes: the id, big-endian) through the daemon at ADDR, then closes when CLOSE is 1
    stream_worker.py train JOB ADDR RANK SIZE OUT [MAX_BATCHES]   reads RANK's batches until the
        stream ends (or MAX_BATCHES were read) and writes the ids read, in order, to OUT (JSON)
Prints OK at the end."""

import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from tenplex import streams  # noqa: E402


def produce(job, addr, first, count, close):
    p = streams.Producer(job, addr=addr, wait=2.0, timeout=120)
    for i in range(first, first + count):
        p.push(struct.pack(">Q", i))
    if close:
        p.close()
    print("pushed %d (refused %d times)" % (p.pushed, p.refused))


def train(job, addr, rank, size, out, max_batches):
    ids, n = [], 0
    for batch in streams.batches(job, rank, size, addr=addr, wait=2.0):
        ids.extend(struct.unpack(">Q", s)[0] for s in batch)
        n += 1
        if max_batches and n >= max_batches:
            break
    with open(out, "w") as f:
        json.dump(ids, f)
    print("read %d batches, %d samples" % (n, len(ids)))


if __name__ == "__main__":
    role, job, addr = sys.argv[1], sys.argv[2], sys.argv[3]
    if role == "produce":
        produce(job, addr, int(sys.argv[4]), int(sys.argv[5]), len(sys.argv) > 6 and sys.argv[6] == "1")
    else:
        train(job, addr, int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7]) if len(sys.argv) > 7 else 0)
    print("OK")
