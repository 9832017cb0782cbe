"""The durable tier (L4) against a real daemon started with --checkpoint-dir (TENPLEX_ADDR).

``save``: saves steps 10 and 20 of job ``dur`` (world 1); a frozen f32 [1000, 1000] tensor stays the
same, a bf16 [513, 7] and an int64 [12345] tensor change. ``saveall``: step 30, every tensor changed.
``savebig STEP MIB``: STEP's state with MIB MiB of f32 in four tensors (to be killed mid-flush).
``check STEP``: the daemon's current generation is STEP and ``tenplex.load`` gives back that step's
state bit for bit (run after the daemon was killed and restarted on its directory); STEP's levels
include ``durable``. Prints OK at the end; any failure raises."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

c = tenplex.Client(os.environ["TENPLEX_ADDR"])
JOB = "dur"
CONFIG = {"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1}


def gen(seed):
    return torch.Generator().manual_seed(seed)


def state(step):
    """Step's state: the frozen tensor is the same up to step 20, everything else changes each step."""
    frozen_seed = 1 if step <= 20 else 1000 + step
    return {"frozen": torch.randn(1000, 1000, generator=gen(frozen_seed)),
            "tuned": torch.randn(513, 7, generator=gen(step)).to(torch.bfloat16),
            "odd": torch.randint(-2**62, 2**62, (12345,), generator=gen(step + 1), dtype=torch.int64),
            "step": step}


def save(step):
    r = tenplex.save(state(step), job=JOB, step=step, rank=0, world=1, config=CONFIG, client=c)
    assert r["complete"], r


def same(a, b):
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        ints = {torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.int64: torch.int64}[a.dtype]
        assert torch.equal(a.contiguous().view(ints), b.contiguous().view(ints)), "bytes differ"
    else:
        assert a == b, (a, b)


def check(step):
    g = c.request("GET", "/api/v1/jobs/%s/generations" % JOB).json()
    assert g["current"] == step, g
    mine = [x for x in g["generations"] if x["step"] == step][0]
    assert mine["complete"] and "durable" in mine["levels"], mine
    loaded, at = tenplex.load(job=JOB, rank=0, client=c)
    assert at == step, at
    want = state(step)
    assert sorted(loaded) == sorted(want), (sorted(loaded), sorted(want))
    for k in want:
        same(want[k], loaded[k])


phase = sys.argv[1]
if phase == "save":
    save(10)
    save(20)
elif phase == "saveall":
    save(30)
elif phase == "savebig":
    mib = int(sys.argv[3])
    big = {"part%d" % i: torch.rand(mib * 65536 // 4, 4, generator=gen(i)) for i in range(4)}
    r = tenplex.save(big, job=JOB, step=int(sys.argv[2]), rank=0, world=1, config=CONFIG, client=c)
    assert r["complete"], r
elif phase == "check":
    check(int(sys.argv[2]))
else:
    raise SystemExit("unknown phase " + phase)
print("OK")
