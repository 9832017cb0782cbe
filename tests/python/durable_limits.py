"""Saves and checks for the durable tier's limits (DurableLimitsIT), against a real daemon (TENPLEX_ADDR).

``save JOB MIB STEP...``: saves each STEP of JOB (world 1): a f32 tensor of MIB MiB drawn from the
step's seed (every block changes from step to step) and the step. ``check JOB MIB STEP``: the job's
current generation is STEP, its levels include ``durable``, and ``tenplex.load`` gives back STEP's
state bit for bit. Prints OK at the end; any failure raises."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

c = tenplex.Client(os.environ["TENPLEX_ADDR"])
CONFIG = {"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1}


def state(step, mib):
    g = torch.Generator().manual_seed(step % (1 << 63))
    return {"w": torch.randn(mib * (1 << 18), generator=g), "step": step}


def check(job, mib, step):
    g = c.request("GET", "/api/v1/jobs/%s/generations" % job).json()
    assert g["current"] == step, g
    mine = [x for x in g["generations"] if x["step"] == step][0]
    assert mine["complete"] and "durable" in mine["levels"], mine
    loaded, at = tenplex.load(job=job, rank=0, client=c)
    assert at == step, at
    want = state(step, mib)
    assert loaded["step"] == step, loaded["step"]
    assert torch.equal(loaded["w"].view(torch.int32), want["w"].view(torch.int32)), "bytes differ"


phase, job, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = [int(s) for s in sys.argv[4:]]
if phase == "save":
    for s in steps:
        r = tenplex.save(state(s, mib), job=job, step=s, rank=0, world=1, config=CONFIG, client=c)
        assert r["complete"], r
elif phase == "check":
    check(job, mib, steps[0])
else:
    raise SystemExit("unknown phase " + phase)
print("OK")
