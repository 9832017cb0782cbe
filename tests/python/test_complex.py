"""Complex tensors (c64, c128) in the store and the planner (TENPLEX_ADDR; TenplexdIT runs it over
shared memory and again over REST with TENPLEX_SHM=0): torch and numpy complex tensors save and load
bit for bit, types included; a range of one reads back its elements whole; a described model whose
complex tensor is split along each dimension goes T = 1 -> 2 -> 1 and every part, then the whole,
equals the tensor's own slices bit for bit. Prints OK at the end; any failure raises."""

import os
import sys
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
u = urlparse(ADDR)
DAEMONS = {"0": "%s:%d" % (u.hostname, u.port)}
SUFFIX = "%d-%s" % (os.getpid(), os.environ.get("TENPLEX_SHM", "1"))


def config(tp):
    return {"tp": tp, "pp": 1, "dp": 1, "devices": [[0, i] for i in range(tp)]}


def same_bits(a, b):
    a = a.numpy() if isinstance(a, torch.Tensor) else a
    b = b.numpy() if isinstance(b, torch.Tensor) else b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


g = torch.Generator().manual_seed(3)
z64 = torch.complex(torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g))
z64[0, 0] = complex(float("nan"), float("-inf"))  # bit patterns, not values
z128 = torch.complex(torch.randn(4, 6, generator=g, dtype=torch.float64),
                     torch.randn(4, 6, generator=g, dtype=torch.float64))
nz = (np.arange(5) * (1 - 2j)).astype(np.complex128)
state = {"model": {"a": z64, "b": z128}, "np": nz, "scalar": np.complex64(1.5 - 0.25j), "zero_d": torch.tensor(2j)}

# ---- save and load, bit for bit and type for type
JOB = "complex-%s" % SUFFIX
tenplex.save(state, job=JOB, step=1, rank=0, world=1, config=config(1), client=c)
back, step = tenplex.load(job=JOB, rank=0, client=c)
assert step == 1
assert type(back["model"]["a"]) is torch.Tensor and back["model"]["a"].dtype == torch.complex64
assert same_bits(back["model"]["a"], z64) and same_bits(back["model"]["b"], z128), back["model"]
assert type(back["np"]) is np.ndarray and same_bits(back["np"], nz), back["np"]
assert type(back["scalar"]) is np.complex64 and back["scalar"] == state["scalar"], back["scalar"]
assert same_bits(back["zero_d"], state["zero_d"]), back["zero_d"]

# ---- a range read: whole elements, the dtype named
path = tenplex.last_loaded()["path"] + "/model/a.numpy.ndarray"
r = c.request("GET", "/api/v1/tensors%s?range=1:3,2:4" % path)
assert r.headers["x-tensor-dtype"] == "c64" and r.headers["x-tensor-dims"] == "2,2", dict(r.headers)
assert r.content == z64[1:3, 2:4].contiguous().numpy().tobytes()

# ---- a described model: T = 1 -> 2 -> 1 splits and joins the complex tensors, each along its dim
SPEC = {"layers": 1, "values": [], "ties": {},
        "tensors": [{"name": "a", "dtype": "c64", "shape": [6, 4], "stage": "first",
                     "partition": {"kind": "split", "dim": 0}},
                    {"name": "b", "dtype": "c128", "shape": [4, 6], "stage": "first",
                     "partition": {"kind": "split", "dim": 1}}]}
TP_JOB = "complex-tp-%s" % SUFFIX
tenplex.save({"model": {"a": z64, "b": z128}}, job=TP_JOB, step=1, rank=0, world=1, config=config(1), client=c,
             spec=SPEC)


def reconfigure(tp):
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % TP_JOB, ok=(202,), json={"to": config(tp), "daemons": DAEMONS})
    st = c.request("GET", r.json()["status"] + "?wait=true").json()
    assert st["state"] == "committed", st


reconfigure(2)
for t in range(2):
    part, _ = tenplex.load(job=TP_JOB, rank=t, client=c)
    assert same_bits(part["model"]["a"], z64[3 * t:3 * t + 3]), (t, part["model"]["a"])
    assert same_bits(part["model"]["b"], z128[:, 3 * t:3 * t + 3].contiguous()), (t, part["model"]["b"])
    tenplex.save(part, job=TP_JOB, step=2, rank=t, world=2, config=config(2), client=c)
reconfigure(1)
whole, step = tenplex.load(job=TP_JOB, rank=0, client=c)
assert step == 2 and same_bits(whole["model"]["a"], z64) and same_bits(whole["model"]["b"], z128), whole
print("OK")
