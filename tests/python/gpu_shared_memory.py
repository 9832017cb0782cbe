"""The GPU-host flow through shared memory, against a real daemon on this host (TENPLEX_ADDR), on a
machine with CUDA: a state of CUDA tensors is saved through the daemon's segment (the mapping
registered with cudaHostRegister, so each tensor is one device-to-host DMA), loaded back into
existing CUDA tensors, exactly; the segment the client mapped cannot be truncated. Not part of the
CPU test suite (it needs a GPU). Prints the figures and OK; any failure raises."""

import errno
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import shared_memory  # noqa: E402

assert torch.cuda.is_available(), "no CUDA device"
c = tenplex.Client(os.environ["TENPLEX_ADDR"])
JOB = "gpu-shm"
g = torch.Generator(device="cpu").manual_seed(3)
state = {"model": {"w": torch.randn(4096, 4096, generator=g).cuda(), "b": torch.randn(4097, generator=g).cuda(),
                   "h": torch.randn(3, 5, 7, generator=g).to(torch.bfloat16).cuda()},
         "step": 1}
nbytes = sum(t.numel() * t.element_size() for t in state["model"].values())
for step in (1, 2, 3):  # the third save reuses the first one's segment (and this process's mapping of it)
    torch.cuda.synchronize()
    t = time.perf_counter()
    r = tenplex.save(state, job=JOB, step=step, client=c, shared=True)
    dt = time.perf_counter() - t
    assert r["complete"], r
    print("save %d through shared memory: %.1f MB in %.3f s" % (step, nbytes / 1e6, dt), flush=True)
maps = list(shared_memory._maps.values())
assert maps and all(m.registered for m in maps if m.writable), [(m.writable, m.registered) for m in maps]
into = {"model": {k: torch.empty_like(v) for k, v in state["model"].items()}}
got, step = tenplex.load(job=JOB, client=c, into=into)
assert step == 3 and got["model"]["w"] is into["model"]["w"] and got["model"]["w"].is_cuda
for k, v in state["model"].items():
    assert torch.equal(got["model"][k], v), k
p = shared_memory.pin(c, JOB, 0)
f = [e["file"] for e in p["entries"] if e.get("file")][0]
try:
    os.truncate(f, 0)
    raise AssertionError("a segment was truncated")
except OSError as e:
    assert e.errno == errno.EPERM, e
shared_memory.release(c, JOB, p["id"])
print("cuda %s, torch %s: registered mappings %d, load into CUDA tensors exact, truncation refused" % (
    torch.cuda.get_device_name(), torch.__version__, sum(1 for m in maps if m.registered)))
print("OK")
