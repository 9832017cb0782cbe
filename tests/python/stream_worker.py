"""Producer or trainer processes of the streamed-sample tests (run by test_streams.py); each runs
its producers or trainers as threads (one HTTP session each), so that a test starts few processes.

    stream_worker.py produce JOB CLOSE ADDR,FIRST,COUNT [...]   each producer pushes samples
        FIRST..FIRST+COUNT-1 (8 bytes: the id, big-endian) through the daemon at ADDR, then closes
        when CLOSE is 1
    stream_worker.py train JOB SIZE MAX_BATCHES OUT ADDR,RANK [...]   each trainer reads RANK's
        batches through ADDR until the stream ends (or MAX_BATCHES, when not 0, were read); OUT gets
        the ids read, in order, per rank (JSON)
    stream_worker.py steps JOB SIZE WORLD OUT ADDR,RANK [...]   each trainer reads RANK's batches
        through its worker's daemon ADDR and, after every step, asks that daemon whether the job
        must stop (tenplex.should_stop, as a training loop at a resource change); when it must, it
        saves its state for that step (one of WORLD data-parallel ranks, worker = rank) and ends;
        OUT as for train
Prints OK at the end; a failing thread fails the process."""

import json
import os
import struct
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex import streams  # noqa: E402

failures = []


def produce(job, addr, first, count, close):
    p = streams.Producer(job, addr=addr, wait=2.0, timeout=120)
    for i in range(first, first + count):
        p.push(struct.pack(">Q", i))
    if close:
        p.close()


def train(job, addr, rank, size, max_batches, out):
    ids, n = [], 0
    for batch in streams.batches(job, rank, size, addr=addr, wait=2.0):
        ids.extend(struct.unpack(">Q", s)[0] for s in batch)
        n += 1
        if max_batches and n >= max_batches:
            break
    out[rank] = ids


def steps(job, addr, rank, size, world, out):
    """Reads batches until the stop flag says stop after a step, then saves that step and ends."""
    c = tenplex.Client(addr)
    ids, step = [], 0
    out[rank] = ids
    for batch in streams.batches(job, rank, size, client=c, wait=2.0):
        ids.extend(struct.unpack(">Q", s)[0] for s in batch)
        step += 1
        if tenplex.should_stop(job, step, client=c):
            config = {"tp": 1, "pp": 1, "dp": world, "devices": [[w, 0] for w in range(world)]}
            tenplex.save({"w": np.full(4, step, dtype=np.float32)}, job=job, step=step, rank=rank, world=world,
                         config=config, client=c, shared=False)
            return
    raise AssertionError("rank %d: the stream ended before the stop flag was raised" % rank)


def guarded(f, *args):
    try:
        f(*args)
    except BaseException as e:  # noqa: B902 (reported by the process)
        failures.append(repr(e))


def main():
    role, job = sys.argv[1], sys.argv[2]
    threads, out = [], {}
    if role == "produce":
        close = sys.argv[3] == "1"
        for spec in sys.argv[4:]:
            addr, first, count = spec.rsplit(",", 2)
            threads.append(threading.Thread(target=guarded, args=(produce, job, addr, int(first), int(count), close)))
    elif role == "steps":
        size, world, path = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        for spec in sys.argv[6:]:
            addr, rank = spec.rsplit(",", 1)
            threads.append(threading.Thread(target=guarded, args=(steps, job, addr, int(rank), size, world, out)))
    else:
        size, max_batches, path = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        for spec in sys.argv[6:]:
            addr, rank = spec.rsplit(",", 1)
            threads.append(threading.Thread(target=guarded, args=(train, job, addr, int(rank), size, max_batches, out)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit("failed: " + "; ".join(failures))
    if role != "produce":
        with open(path, "w") as f:
            json.dump({str(k): v for k, v in out.items()}, f)
    print("OK")


if __name__ == "__main__":
    main()
