"""A reconfiguration's moved state is loaded from the memory the move wrote, once per worker
(TENPLEX_ADDR, a daemon with shared memory).

Two tensor-parallel ranks save halves of odd-sized tensors through shared memory; the daemon changes
the job from (T, D) = (2, 1) to (1, 3), so each of the three data-parallel ranks needs the whole
tensors. The move assembles them once (the replicas share it) in shared memory: every rank's load pin
names the same file and offset for each tensor, no rank's load copies anything (``copied_bytes`` 0)
or reads over REST, and the bytes are exactly the halves joined. The reconfiguration's status says,
for the worker, that the move touched new memory (nothing was kept for reuse yet). Prints OK."""

import os
import sys
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import shared_memory as shm  # noqa: E402

c = tenplex.Client(os.environ["TENPLEX_ADDR"])
u = urlparse(os.environ["TENPLEX_ADDR"])
DAEMONS = {"0": "%s:%d" % (u.hostname, u.port)}
JOB = "moved-loads-%d" % os.getpid()
SHAPES = {"a": (1002, 37), "b": (6, 70001), "c": (2, 3)}  # 148 KB, 1.7 MB and 24 bytes of f32
SPEC = {"layers": 1, "values": [],
        "tensors": [{"name": k, "dtype": "f32", "shape": list(s), "stage": "first",
                     "partition": {"kind": "split", "dim": 0}} for k, s in SHAPES.items()]}
g = torch.Generator().manual_seed(41)
whole = {k: torch.randn(*s, generator=g) for k, s in SHAPES.items()}


def config(tp, dp):
    return {"tp": tp, "pp": 1, "dp": dp, "devices": [[0, i] for i in range(tp * dp)]}


for t in range(2):
    half = {k: v[v.shape[0] // 2 * t:v.shape[0] // 2 * (t + 1)].clone() for k, v in whole.items()}
    tenplex.save({"model": half}, job=JOB, step=7, rank=t, world=2, config=config(2, 1), client=c, spec=SPEC)
    assert tenplex.last_saved()["via"] == "shared_memory", tenplex.last_saved()

r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % JOB, ok=(202,), json={"to": config(1, 3), "daemons": DAEMONS})
st = c.request("GET", r.json()["status"] + "?wait=true").json()
assert st["state"] == "committed", st
note = st["workers"]["0"].get("slowMemory")
assert note and "new shared-memory segment" in note and "touched for the first time" in note, st["workers"]

where = []
for rank in range(3):
    pinned = shm.pin(c, JOB, rank)
    try:
        assert pinned["copiedBytes"] == 0 and "restReason" not in pinned, pinned
        where.append({e["path"]: (e["file"], e["offset"]) for e in pinned["entries"] if e["type"] == "tensor"})
    finally:
        shm.release(c, JOB, pinned["id"])
    state, step = tenplex.load(job=JOB, rank=rank, client=c)
    went = tenplex.last_loaded()
    assert step == 7 and went["via"] == "shared_memory" and went["rest_tensors"] == 0 and went["copied_bytes"] == 0, went
    for k, v in whole.items():
        assert torch.equal(state["model"][k], v), "rank %d: %s differs from the joined halves" % (rank, k)
assert len(where[0]) == len(SHAPES), where[0]
assert where[0] == where[1] == where[2], "the three replicas map the same bytes: %s" % where
c.request("DELETE", "/api/v1/jobs/" + JOB)
print("OK")
