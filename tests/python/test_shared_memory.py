"""Saves and loads through the daemon's shared memory against a real daemon on this host
(TENPLEX_ADDR): exact round trips of odd sizes and dtypes, loads into existing tensors, segments
reused by steady-state saves, asynchronous saves, bad reservations refused with nothing changed, and
a trainer killed by PID mid-save leaving the previous generation intact and no memory held. Prints
OK at the end; any failure raises."""

import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, CLIENT)

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import routes, shared_memory  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "pyshm"


def overview(job=JOB):
    return c.request("GET", routes.shared_route(job)).json()


def pinned_nonces(job=JOB):
    """The segments (by nonce) that hold what the job's rank 0 loads now."""
    p = shared_memory.pin(c, job, 0)
    shared_memory.release(c, job, p["id"])
    return {e["nonce"] for e in p["entries"] if e.get("nonce")}


def state_at(step):
    g = torch.Generator().manual_seed(step)
    return {"model": {"w": torch.randn(1000, 1000, generator=g), "b": torch.arange(7, dtype=torch.int64) * step,
                      "h": torch.randn(3, 5, 7, generator=g).to(torch.bfloat16), "empty": torch.zeros(0, 3),
                      "mask": torch.rand(13, generator=g) > 0.5, "half": torch.randn(257, generator=g).half()},
            "opt": {0: {"exp_avg": torch.full((5,), float(step))}}, "step": step, "name": "gpt"}


def same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return type(a) is type(b) and a == b


# ---- a save goes through shared memory: the daemon holds a segment, a sealed memory file that this
# process opens as /proc/<daemon pid>/fd/<n>; the load is exact
before = overview()["liveSegments"]
r = tenplex.save(state_at(1), job=JOB, step=1, client=c)
assert r["complete"] and r["tensors"] == 7, r
assert overview()["liveSegments"] == before + 1, overview()
p = shared_memory.pin(c, JOB, 0)
shared_memory.release(c, JOB, p["id"])
files = {e["file"] for e in p["entries"] if e.get("file")}
assert len(files) == 1 and next(iter(files)).startswith("/proc/") and "/fd/" in next(iter(files)), files
got, step = tenplex.load(job=JOB, client=c)
assert step == 1 and same(got, state_at(1)), got
assert tenplex.last_loaded()["source"] == "generation"

# ---- the same bytes over REST (another client's view): identical
got_rest, _ = tenplex.load(job=JOB, client=c, shared=False)
assert same(got_rest, state_at(1))

# ---- load into existing tensors: filled in place, the same objects come back
into = {"model": {k: torch.empty_like(v) for k, v in state_at(1)["model"].items()},
        "opt": {0: {"exp_avg": torch.empty(5)}}}
w = into["model"]["w"]
got, _ = tenplex.load(job=JOB, client=c, into=into)
assert got["model"]["w"] is w and torch.equal(w, state_at(1)["model"]["w"])
assert got["opt"][0]["exp_avg"] is into["opt"][0]["exp_avg"] and same(got, state_at(1))
# a tensor of another shape is refused before anything is copied
bad = {"model": {"w": torch.zeros(1000, 999), "b": torch.zeros(7, dtype=torch.int64)}}
try:
    tenplex.load(job=JOB, client=c, into=bad)
    raise AssertionError("loaded into a tensor of another shape")
except tenplex.TenplexError as e:
    assert "model/w.numpy.ndarray is f32[1000, 1000] in the checkpoint" in str(e), e
assert not bad["model"]["b"].any(), "a tensor was written before the refusal"

# ---- steady state: saves reuse the segments older generations freed (no new segment after warm-up:
# two generations live and the one being saved, each segment with its own nonce)
for s in range(2, 5):
    tenplex.save(state_at(s), job=JOB, step=s, client=c)
used = set()
for s in range(5, 9):
    tenplex.save(state_at(s), job=JOB, step=s, client=c)
    used |= pinned_nonces()
assert len(used) <= 3, used
assert same(tenplex.load(job=JOB, client=c)[0], state_at(8))

# ---- asynchronous save: returns after the copy; training may change the state at once
st = state_at(9)
h = tenplex.save(st, job=JOB, step=9, client=c, blocking=False)
st["model"]["w"].add_(1.0)
assert h.wait(60)["complete"] and h.done()
assert same(tenplex.load(job=JOB, client=c)[0], state_at(9))
# the same over REST: the state is copied to host memory before save returns
st = state_at(10)
h = tenplex.save(st, job="pyshm-rest", step=1, client=c, blocking=False, shared=False)
st["model"]["w"].mul_(0)
assert h.wait(60)["complete"]
assert same(tenplex.load(job="pyshm-rest", client=c, shared=False)[0], state_at(10))
assert overview("pyshm-rest")["open"] == []
# its error reaches the handle, and the next save if nobody looked
h = tenplex.save(state_at(10), job=JOB, step=9, client=c, blocking=False)  # step 9 is sealed with another state
try:
    tenplex.save(state_at(10), job=JOB, step=10, client=c)
    raise AssertionError("the failed asynchronous save was not reported")
except tenplex.TenplexError as e:
    assert "asynchronous save of step 9" in str(e) and "409" in str(e), e
assert isinstance(h.exception(), tenplex.TenplexError) and h.exception().code == "conflict"
assert tenplex.save(state_at(10), job=JOB, step=10, client=c)["complete"]

# ---- bad reservations: a clear 400/404/507, nothing reserved, nothing stored
def refused(method, route, body, status, code=None):
    r = c.request(method, route, json=body, ok=(status,))
    if code:
        assert r.headers.get("X-Tenplex-Error-Code") == code, (route, body, r.headers, r.text)
    return r.text


saves = routes.shared_saves_route(JOB, 0)
base = {"pid": os.getpid(), "start": shared_memory.process_start()}
t = {"path": "w.numpy.ndarray", "dtype": "f32", "shape": [4]}
assert "dtype" in refused("POST", saves, dict(base, tensors=[dict(t, dtype="f33")]), 400).lower()
assert "shape" in refused("POST", saves, dict(base, tensors=[dict(t, shape=[-1])]), 400)
assert "twice" in refused("POST", saves, dict(base, tensors=[t, t]), 400)
assert "path" in refused("POST", saves, dict(base, tensors=[dict(t, path="../x")]), 400)
assert "lease" in refused("POST", saves, dict(base, tensors=[t], lease=0), 400)
assert "tensors" in refused("POST", saves, dict(base, tensors="w"), 400)
refused("POST", saves, dict(base, tensors=[dict(t, shape=[1 << 40])]), 413, "too_large")  # over the budget
big = dict(base, tensors=[dict(t, shape=[150 << 18])])  # 150 MiB: the daemon's budget (256 MiB) holds one
held = c.request("POST", saves, json=big, ok=(201,)).json()
refused("POST", saves, big, 507, "insufficient_storage")
c.request("DELETE", routes.shared_route(JOB, held["id"]))
refused("POST", routes.shared_commit_route(JOB, 0, "nosuch"), {"step": 11, "world": 1}, 404, "not_found")
refused("DELETE", routes.shared_route(JOB, "nosuch"), None, 404, "not_found")
assert overview()["open"] == [], overview()
assert tenplex.load(job=JOB, client=c)[1] == 10

# ---- a commit that names one path as a tensor and a file is refused whole, nothing leaks
live = overview()["liveSegments"]
assert "twice" in refused("POST", saves, dict(base, tensors=[t], files=[{"path": "w.numpy.ndarray", "size": 3}]), 400)
res = c.request("POST", saves, json=dict(base, tensors=[t], files=[{"path": "x.bytes", "size": 3}]), ok=(201,)).json()
assert res["files"][0]["offset"] > res["tensors"][0]["offset"], res
refused("POST", routes.shared_commit_route(JOB, 0, res["id"]),  # an inline file on the tensor's path
        {"step": 11, "world": 1, "files": {"w.numpy.ndarray": "eHl6"}, "order": ["w.numpy.ndarray", "x.bytes"]},
        400, "bad_request")
assert overview()["open"] == [] and overview()["liveSegments"] == live, overview()

# ---- a commit that cannot be published (the job's save directory is a file): 409, nothing staged or held
tenplex.put_file("/job/pyshm-file/save", b"not a directory", client=c)
live = overview()["liveSegments"]
try:
    tenplex.save({"w": torch.ones(3)}, job="pyshm-file", step=1, client=c, shared=True)
    raise AssertionError("published under a file")
except tenplex.TenplexError as e:
    assert e.status == 409, e
staged = c.request("GET", routes.dirs_route("/job/pyshm-file/staging"), ok=(200, 404))
assert staged.status_code == 404 or staged.json()["entries"] == [], staged.text
assert overview("pyshm-file")["open"] == [] and overview()["liveSegments"] == live, overview()

# ---- a reservation whose lease ran out while its owner may still write: its segment is not handed out again
res = c.request("POST", saves, json=dict(tensors=[t], lease=1, pid=0), ok=(201,)).json()
deadline = time.monotonic() + 30
while overview()["open"] and time.monotonic() < deadline:
    time.sleep(0.1)  # polling the daemon's reaper, with a deadline
assert overview()["open"] == [], overview()
again = c.request("POST", saves, json=dict(base, tensors=[t]), ok=(201,)).json()
assert again["nonce"] != res["nonce"], res  # deleted, not kept for the next save
c.request("DELETE", routes.shared_route(JOB, again["id"]))
# a careless client writes over a segment's header and releases it: the next save still works
res = c.request("POST", saves, json=dict(base, tensors=[t]), ok=(201,)).json()
with open(res["file"], "r+b") as f:
    f.write(b"\0" * 64)
c.request("DELETE", routes.shared_route(JOB, res["id"]))
assert tenplex.save(state_at(11), job=JOB, step=11, client=c, shared=True)["complete"]

# ---- numpy states: 0-d arrays and scalars, dtypes torch lacks, a file over the control-body limit
import numpy as np  # noqa: E402
np_state = {"zero_d": np.array(3.5, dtype=np.float32), "scalar": np.float64(2.25), "u16": np.arange(9, dtype=np.uint16),
            "big": b"x" * (13 << 20)}
assert tenplex.save(np_state, job="pyshm-np", step=1, client=c, shared=True)["complete"]
back, _ = tenplex.load(job="pyshm-np", client=c, as_torch=False)
assert back["zero_d"].shape == () and float(back["zero_d"]) == 3.5 and float(back["scalar"]) == 2.25
assert back["u16"].dtype == np.uint16 and (back["u16"] == np.arange(9)).all() and back["big"] == np_state["big"]
back, _ = tenplex.load(job="pyshm-np", client=c)  # with torch: u16 comes as numpy (older torch has no uint16)
assert (np.asarray(back["u16"]) == np.arange(9)).all()

# ---- a trainer killed by PID mid-save: the previous generation stays, its reservation is given back
child = subprocess.Popen([sys.executable, "-c", """
import sys, torch
sys.path.insert(0, %r)
import tenplex
from tenplex.wire import shared_memory
c = tenplex.Client(%r)
tensors = [("model/w.numpy.ndarray", torch.full((1000, 1000), 7.0))]
res, m = shared_memory.reserve(c, %r, 0, tensors)
shared_memory.fill(m, res, tensors)
print(res["id"], flush=True)
sys.stdin.read()
""" % (CLIENT, ADDR, JOB)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
handle = child.stdout.readline().strip()
assert [o["id"] for o in overview()["open"]] == [handle], overview()
assert overview()["open"][0]["ownerVisible"], overview()
live = overview()["liveSegments"]
os.kill(child.pid, signal.SIGKILL)
child.wait()
deadline = time.monotonic() + 30
while overview()["open"] and time.monotonic() < deadline:
    time.sleep(0.1)  # polling the daemon's reaper (it looks every second), with a deadline
assert overview()["open"] == [], overview()
assert overview()["liveSegments"] == live - 1, overview()
got, step = tenplex.load(job=JOB, client=c)
assert step == 11 and same(got, state_at(11))
staged = c.request("GET", routes.dirs_route("/job/%s/staging" % JOB), ok=(200, 404))
assert staged.status_code == 404 or staged.json()["entries"] == [], staged.text  # nothing half-published
assert tenplex.save(state_at(12), job=JOB, step=12, client=c)["complete"]

# ---- tensors not in shared memory (saved over REST, or moved by a reconfiguration) are copied into a
# segment of the load pin's own: the load maps them, with no REST request per tensor; the copy goes with
# the pin, and when the budget has no room for it the load reads them over REST as before
def tensor_gets(job, **kw):
    """Loads the job's rank 0 and counts the REST reads of tensors it made; returns (state, reads)."""
    calls = []
    real = c.request

    def counting(method, route, *a, **k):
        if method == "GET" and route.startswith("/api/v1/tensors/"):
            calls.append(route)
        return real(method, route, *a, **k)
    c.request = counting
    try:
        return tenplex.load(job=job, client=c, **kw)[0], len(calls)
    finally:
        c.request = real


FULL = "pyshm-full"
big_state = {"w": torch.randn(10 << 20, generator=torch.Generator().manual_seed(5)), "b": torch.arange(11)}
assert tenplex.save(big_state, job=FULL, step=1, client=c, shared=False)["complete"]
live = overview()["liveSegments"]
p = shared_memory.pin(c, FULL, 0)
copied = [e for e in p["entries"] if e["type"] == "tensor"]
assert len(copied) == 2 and all(e.get("file") for e in copied) and len({e["nonce"] for e in copied}) == 1, copied
assert overview()["liveSegments"] == live + 1, overview()
shared_memory.release(c, FULL, p["id"])
assert overview()["liveSegments"] == live, overview()
got, reads = tensor_gets(FULL)
assert same(got, big_state) and reads == 0, reads
got, reads = tensor_gets(FULL, shared=False)
assert same(got, big_state) and reads == 2, reads
# with a 120 MiB reservation held, a copy of the 40 MiB tensor would leave less than a quarter of the
# budget (256 MiB) free: the saves and reconfigurations that need it come first
held = c.request("POST", routes.shared_saves_route(FULL, 0),
                 json=dict(base, tensors=[dict(t, shape=[120 << 18])]), ok=(201,)).json()
p = shared_memory.pin(c, FULL, 0)
shared_memory.release(c, FULL, p["id"])
assert not any(e.get("file") for e in p["entries"]), p["entries"]
got, reads = tensor_gets(FULL)
assert same(got, big_state) and reads == 2, reads
c.request("DELETE", routes.shared_route(FULL, held["id"]))
c.request("DELETE", "/api/v1/jobs/" + FULL, ok=(200, 204))


# ---- a save maps its segment with its page tables filled (MAP_POPULATE: every page of the mapping is
# resident in this process at once, not faulted in one by one by the copy); a load asks for huge pages
# for the whole 2 MiB blocks of the tensors it writes, new or given (``into``); the bytes are exact
def vma(addr):
    """The /proc/self/smaps fields of the mapping holding ``addr``."""
    fields, hit = {}, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                if hit:
                    break
                hit = lo <= addr < hi
            elif hit:
                fields[head[0].rstrip(":")] = head[1:]
    return fields


HUGE = "pyshm-huge"
odd = {"w": torch.randn(3_000_017, dtype=torch.float64, generator=torch.Generator().manual_seed(9)),
       "v": torch.randn(1_000_003, generator=torch.Generator().manual_seed(10)), "s": torch.arange(5)}
shared_memory._maps.clear()  # a fresh process's view: no mapping kept from earlier saves
res, m = shared_memory.reserve(c, HUGE, 0, list(odd.items()))
f = vma(shared_memory.np.frombuffer(m.mm, dtype=shared_memory.np.uint8).ctypes.data)
assert m.writable and int(f["Rss"][0]) * 1024 >= len(m.mm) - 4096, ("populated at map time", f["Rss"], len(m.mm))
shared_memory.release(c, HUGE, res["id"])
assert tenplex.save(odd, job=HUGE, step=1, client=c)["complete"]
got = tenplex.load(HUGE, 0, c)[0]
assert same(got, odd), "exact into new tensors"
assert "hg" in vma(got["w"].data_ptr() + (2 << 20))["VmFlags"], "huge pages asked for a new tensor"
into = {"w": torch.empty(3_000_017, dtype=torch.float64), "v": torch.empty(1_000_003), "s": torch.empty(5, dtype=torch.int64)}
got = tenplex.load(HUGE, 0, c, into=into)[0]
assert got["w"] is into["w"] and same(got, odd), "exact into given tensors"
assert "hg" in vma(into["w"].data_ptr() + (2 << 20))["VmFlags"], "huge pages asked for a given tensor"
for other in (torch.empty(4 << 20, device="meta"), torch.zeros(0), torch.eye(3).to_sparse(),
              torch.empty(8 << 20)[1:], torch.empty(8 << 20)[::2]):
    shared_memory.huge_pages(other)  # a hint only: never raises, never asked for memory not the tensor's
os.environ["TENPLEX_HUGEPAGES"] = "0"  # read once per process: a second process sees the switch
off = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); import torch; from tenplex.wire import "
                      "shared_memory as s; t = torch.empty(4 << 20); s.huge_pages(t); print(s._madvise)" % CLIENT],
                     capture_output=True, text=True, check=True)
assert off.stdout.strip() == "[None]", off
del os.environ["TENPLEX_HUGEPAGES"]
c.request("DELETE", "/api/v1/jobs/" + HUGE, ok=(200, 204))
print("OK")
