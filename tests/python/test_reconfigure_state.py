"""A reconfiguration never drops what a rank saved (TENPLEX_ADDR).

A data-parallel-only job needs no description: ranks save a training loop's whole
state (``model``, ``optimizer``, ``scheduler``, ``scaler``, ``epoch``, ``step``, ``rng``, ``args``,
``best_acc``) and every checkpoint of state_catalogue.py, with no spec and no rules; the daemon
reconfigures the job 2 -> 4 -> 1 data-parallel ranks, and every rank loads every value with its
type: new rank d gets old rank d's values (its RNG state stays its own), a rank beyond the old ones
rank 0's. A change of T is refused without a description.

A described model (a spec whose values list nothing, as ``describe`` gives for a model and its
optimizer) changed from T = 1 to T = 2 keeps everything else its rank saved (scheduler, step, epoch,
RNG state, the catalogue), with types, beside the new shards. Prints OK at the end; any failure
raises."""

import argparse
import os
import random
import sys
import warnings
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import state_catalogue as cat  # noqa: E402
import tenplex  # noqa: E402

warnings.simplefilter("ignore")
ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
u = urlparse(ADDR)
DAEMONS = {"0": "%s:%d" % (u.hostname, u.port)}
JOB = "dp-resize-%d" % os.getpid()
TP_JOB = "tp-change-%d" % os.getpid()
CATALOGUE = {e.name: e.state() for e in cat.entries()}


def config(dp, tp=1):
    return {"tp": tp, "pp": 1, "dp": dp, "devices": [[0, i] for i in range(dp * tp)]}


def training_state(rank):
    """What a training loop saves, equal on every rank but its RNG state and its own note."""
    torch.manual_seed(0)
    model = cat._model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    cat._train(model, opt)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [1, 3], 0.5)
    sched.step()
    random.seed(rank)
    np.random.seed(rank)
    torch.manual_seed(rank)
    return {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "scaler": {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                       "_growth_tracker": 3},
            "epoch": 2, "step": 10, "best_acc": 0.5, "args": argparse.Namespace(lr=1e-2, seed=0),
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
            "rank_note": "saved by rank %d" % rank, "catalogue": CATALOGUE}


def save_all(states, step, dp):
    for rank, st in enumerate(states):
        tenplex.save(st, job=JOB, step=step, rank=rank, world=dp, config=config(dp), client=c)


def reconfigure(to, ok=(202,), job=JOB):
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % job, ok=ok, json={"to": to, "daemons": DAEMONS})
    if r.status_code != 202:
        return r
    st = c.request("GET", r.json()["status"] + "?wait=true").json()
    assert st["state"] == "committed", st
    return r


def load(rank, job=JOB):
    state, step = tenplex.load(job=job, rank=rank, client=c)
    assert tenplex.last_loaded()["source"] == "reconfiguration", tenplex.last_loaded()
    return state, step


# ---- 2 ranks save with no spec and no rules; the daemon makes 4 of them
saved = [training_state(r) for r in range(2)]
save_all(saved, 10, 2)
reconfigure(config(4))
loaded = [load(r) for r in range(4)]
for d, (state, step) in enumerate(loaded):
    assert step == 10, step
    cat.same(saved[d if d < 2 else 0], state, "/rank %d/" % d, ordered=False)
assert loaded[1][0]["rank_note"] == "saved by rank 1" and loaded[3][0]["rank_note"] == "saved by rank 0"

# the loaded state resumes: a scheduler's closed form needs its Counter, the optimizer its int keys
model = cat._model()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.MultiStepLR(opt, [1, 3], 0.5)
model.load_state_dict(loaded[2][0]["model"])
opt.load_state_dict(loaded[2][0]["optimizer"])
sched.load_state_dict(loaded[2][0]["scheduler"])
sched.step(3)

# ---- 4 ranks save; the daemon makes 1 of them: rank 0's state, every value still there
four = [dict(training_state(r), step=20, rank_note="saved by rank %d of 4" % r) for r in range(4)]
save_all(four, 20, 4)
reconfigure(config(1))
state, step = load(0)
assert step == 20
cat.same(four[0], state, "/one rank/", ordered=False)

# ---- a change of T needs a description: refused, naming what is missing
tenplex.save(four[0], job=JOB, step=30, rank=0, world=1, config=config(1), client=c)
r = reconfigure(config(1, tp=2), ok=(400,))
assert "no model in the request and none stored" in r.text and "data-parallel" in r.text, r.text

# ---- a described model, T = 1 -> 2: the spec places only "w"; everything else is still there
SPEC = {"layers": 1, "values": [],
        "tensors": [{"name": "w", "dtype": "f32", "shape": [4, 3], "stage": "first",
                     "partition": {"kind": "split", "dim": 0}}]}
w = torch.arange(12, dtype=torch.float32).reshape(4, 3)
whole = dict(training_state(0), model=__import__("collections").OrderedDict(w=w))
tenplex.save(whole, job=TP_JOB, step=5, rank=0, world=1, config=config(1), client=c, spec=SPEC)
reconfigure(config(1, tp=2), job=TP_JOB)
for t in range(2):
    state, step = load(t, job=TP_JOB)
    assert step == 5 and torch.equal(state["model"]["w"], w[2 * t:2 * t + 2]), state["model"]
    cat.same({k: v for k, v in whole.items() if k != "model"}, {k: v for k, v in state.items() if k != "model"},
             "/tp rank %d/" % t, ordered=False)
    assert type(state["model"]) is type(whole["model"]), type(state["model"])

# ---- a described model, (T, D) = (2, 2) -> (1, 2): what the spec does not place is carried as one
# replicated value per data-parallel index, checked equal across the tensor ranks that saved it
CARRY_JOB = "tp-carry-%d" % os.getpid()


def tp_states(epoch_of):
    """Rank r of (T=2, D=2) (tensor rank r % 2, data-parallel index r // 2): its half of w, its index's RNG."""
    out = []
    for rank in range(4):
        torch.manual_seed(100 + rank // 2)
        out.append({"model": {"w": w[2 * (rank % 2):2 * (rank % 2) + 2].clone()}, "epoch": epoch_of(rank),
                    "rng": torch.get_rng_state(), "note": "data index %d" % (rank // 2)})
    return out


def save_tp(states, job, step):
    for rank, st in enumerate(states):
        tenplex.save(st, job=job, step=step, rank=rank, world=4, config=config(2, tp=2), client=c, spec=SPEC)


carried = tp_states(lambda rank: 4)
save_tp(carried, CARRY_JOB, 6)
reconfigure(config(2), job=CARRY_JOB)
for d in range(2):
    state, step = load(d, job=CARRY_JOB)
    assert step == 6 and torch.equal(state["model"]["w"], w), state["model"]
    assert state["note"] == "data index %d" % d and state["epoch"] == 4, state
    assert torch.equal(state["rng"], carried[2 * d]["rng"]), "new rank %d: its own index's RNG state" % d

# values that differ between the tensor ranks of one data-parallel index: refused before anything changes,
# naming the key and the ranks; the previous generation still loads
DIFFER_JOB = "tp-differ-%d" % os.getpid()
differing = tp_states(lambda rank: 5 if rank == 1 else 4)
save_tp(differing, DIFFER_JOB, 7)
r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % DIFFER_JOB, ok=(202,), json={"to": config(2), "daemons": DAEMONS})
st = c.request("GET", r.json()["status"] + "?wait=true").json()
assert st["state"] == "aborted", st
assert "value 'epoch' (saved as epoch.int) differs between ranks 0 and 1 (data-parallel index 0)" in st["error"], st
for rank in range(4):
    state, step = tenplex.load(job=DIFFER_JOB, rank=rank, client=c)
    assert tenplex.last_loaded()["source"] == "generation" and step == 7, tenplex.last_loaded()
    assert state["epoch"] == differing[rank]["epoch"] and torch.equal(state["model"]["w"], differing[rank]["model"]["w"])
print("OK")
