"""Load after save against a real daemon (TENPLEX_ADDR): a job restarted with no reconfiguration
loads its latest complete generation; a reconfiguration's output wins only while it is as new as
the latest generation; :func:`tenplex.last_loaded` says which was loaded; a second, different save
at a step the rank already sealed is refused (409, ``conflict``) and the first stays. Prints OK at
the end; any failure raises."""

import json
import os
import sys
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "pygen"
CONFIG = {"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1}
SPEC = {"layers": 1, "values": [],
        "tensors": [{"name": "w", "dtype": "f32", "shape": [4], "partition": {"kind": "replicated"}, "stage": "first"}]}


def save(step, value):
    return tenplex.save({"w": torch.full((4,), float(value))}, job=JOB, step=step, rank=0, world=1, config=CONFIG,
                        client=c)


def load():
    state, step = tenplex.load(job=JOB, rank=0, client=c)
    return float(state["w"][0]), step, tenplex.last_loaded()["source"]


def reconfigure():
    u = urlparse(ADDR)
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % JOB, ok=(202,),
                  json={"model": SPEC, "to": {"tp": 1, "pp": 1, "dp": 1, "devices": [[0, 0]]},
                        "daemons": {"0": "%s:%d" % (u.hostname, u.port)}}).json()
    st = c.request("GET", r["status"] + "?wait=true").json()
    assert st["state"] == "committed", st


# ---- nothing saved yet: NoCheckpoint, with the daemon's reason
assert tenplex.last_loaded() is None
try:
    tenplex.load(job=JOB, rank=0, client=c)
    raise AssertionError("loaded before any save")
except tenplex.NoCheckpoint as e:
    assert e.status == 404 and "nothing to load for rank 0 of job %s" % JOB in str(e), e
    assert str(e).count("nothing to load") == 1 and "no complete generation" in str(e), e  # said once

# ---- save, then load with no reconfiguration in between: the saved state (a restart in place)
assert save(10, 10)["complete"]
assert load() == (10.0, 10, "generation"), load()
assert tenplex.last_loaded()["path"] == "/job/%s/generations/10/0" % JOB, tenplex.last_loaded()

# ---- save at 45, reconfigure (from generation 45), load: the reconfiguration's output; save at 60: 60
assert save(45, 45)["complete"]
reconfigure()
assert load() == (45.0, 45, "reconfiguration"), load()
assert save(60, 60)["complete"]
assert load() == (60.0, 60, "generation"), load()

# ---- the same step again: the same state is a retry, a different one is refused and the first stays
assert save(60, 60)["complete"]
try:
    save(60, 61)
    raise AssertionError("a second, different save at step 60 was accepted")
except tenplex.TenplexError as e:
    assert e.status == 409 and e.code == "conflict" and "newer step" in e.reason, (e.status, e.code, e.reason)
assert load() == (60.0, 60, "generation"), load()
assert save(61, 61)["complete"]
assert load() == (61.0, 61, "generation"), load()

# ---- a rank of another configuration (a job name used again) is refused naming both, before reading
other = {"tp": 2, "pp": 2, "dp": 1, "devices": [[0, 0], [0, 1], [0, 2], [0, 3]]}
try:
    tenplex.load(job=JOB, rank=0, client=c, config=other)
    raise AssertionError("a rank of (2,2,1) loaded a generation saved under (1,1,1)")
except tenplex.ConfigMismatch as e:
    assert "(T,P,D)=(2, 2, 1)" in str(e) and "generation 61 was saved under (T,P,D)=(1, 1, 1)" in str(e), e
os.environ["TENPLEX_CONFIG"] = json.dumps(other)  # what tenplex run sets
try:
    tenplex.load(job=JOB, rank=0, client=c)
    raise AssertionError("TENPLEX_CONFIG was not compared")
except tenplex.ConfigMismatch:
    pass
del os.environ["TENPLEX_CONFIG"]
assert tenplex.load(job=JOB, rank=0, client=c, config=dict(CONFIG, devices=[[0, 0]]))[1] == 61  # same (T,P,D)
print("OK")
