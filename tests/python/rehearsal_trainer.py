"""A trainer rank of the rehearsal tests (run by rehearsal_cluster.py): ``fill`` puts known samples
into its rank's buffer and saves a checkpoint (so that a resource change can move the job); ``train``
runs steps that augment each minibatch with representatives and offer candidates, and reports the
origins of the representatives it got.

Usage: rehearsal_trainer.py fill <daemon-url> <job> <rank> <world> <per-class-count>
       rehearsal_trainer.py train <daemon-url> <job> <rank> <steps> <r> [<ahead>]"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402
from tenplex.rehearsal import RehearsalBuffer  # noqa: E402

CLASSES, PER_CLASS, BATCH = 4, 10, 8


def sample_id(x):
    """A sample's input is [origin rank, class, index] (+ a float feature): its identity."""
    return tuple(int(v) for v in x[:3])


def fill(url, job, rank, world, n):
    c = tenplex.Client(url)
    buf = RehearsalBuffer(job, rank, classes=CLASSES, per_class=PER_CLASS, candidates=BATCH, batch=BATCH, seed=11,
                          client=c)
    xs = [np.array([rank, k, i, 0], dtype=np.int32) for k in range(CLASSES) for i in range(n)]
    for at in range(0, len(xs), BATCH):
        x = np.stack(xs[at:at + BATCH])
        y = x[:, 1].astype(np.int64)
        logits = np.eye(CLASSES, dtype=np.float32)[y] * (rank + 1)
        buf.update(x, y, extra=logits, wait=True)  # c = b: every sample is a candidate
    buf.close()
    counts = buf.status()["ranks"][str(rank)]
    assert counts == [n] * CLASSES, counts
    config = {"tp": 1, "pp": 1, "dp": world, "devices": [[w, 0] for w in range(world)]}
    tenplex.save({"w": np.zeros(4, dtype=np.float32)}, job=job, step=1, rank=rank, world=world, config=config, client=c,
                 shared=False)
    print("filled rank %d: %s" % (rank, counts), flush=True)


def train(url, job, rank, steps, r, ahead=1):
    buf = RehearsalBuffer(job, rank, representatives=r, client=tenplex.Client(url), ahead=ahead)
    rng = np.random.default_rng(rank)
    reps, sizes = [], []
    for step in range(steps):
        x = np.stack([np.array([100 + rank, k, step * BATCH + i, 0], dtype=np.int32)
                      for i, k in enumerate(rng.integers(0, CLASSES, BATCH))])
        y = x[:, 1].astype(np.int64)
        logits = np.eye(CLASSES, dtype=np.float32)[y]
        x2, y2, e2 = buf.augment(x, y, logits)
        assert (x2[:, 1] == y2).all(), "each representative keeps its label"
        assert (e2.argmax(axis=1) == y2).all(), "and its extra part"
        sizes.append(len(x2))
        reps += [sample_id(row) for row in x2[BATCH:]]
        buf.update(x, y, extra=logits)
    buf.representatives()
    buf.close()
    print(json.dumps({"rank": rank, "sizes": sizes, "reps": reps, "waited": buf.waited}), flush=True)


if __name__ == "__main__":
    mode, url, job, rank = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if mode == "fill":
        fill(url, job, rank, int(sys.argv[5]), int(sys.argv[6]))
    else:
        train(url, job, rank, int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]) if len(sys.argv) > 7 else 1)
