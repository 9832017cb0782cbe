"""examples/elastic_dp.py against a real daemon (TENPLEX_ADDR): a CNN with BatchNorm and an
nn.Transformer go elastic 2 -> 4 -> 1 data-parallel ranks with no description at all (the daemon
reconfigures each change). Each run's final state equals, bit for bit, the same schedule done with
torch.save/torch.load files; the nn.Transformer's (no batch-dependent layer) also equals a static
one-rank run within 1e-9, while the CNN's BatchNorm statistics are per rank and do not. Prints OK at
the end; any failure raises."""

import json
import os
import socket
import subprocess
import sys
import tempfile
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import state_catalogue as cat  # noqa: E402
import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
u = urlparse(ADDR)
DAEMONS = {"0": "%s:%d" % (u.hostname, u.port)}
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "elastic_dp.py")
SCHEDULE = [(2, 4), (4, 8), (1, 12)]  # (data-parallel ranks, train until step)


def config(dp):
    return {"tp": 1, "pp": 1, "dp": dp, "devices": [[0, i] for i in range(dp)]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(job, model, dp, until, store, out):
    port = free_port()
    procs = []
    for rank in range(dp):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(dp), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TENPLEX_JOB=job, TENPLEX_CONFIG=json.dumps(config(dp)), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, EXAMPLE, "--model", model, "--until", str(until), "--store",
                                       store, "--out", out], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    outputs = [p.communicate(timeout=300)[0].decode() for p in procs]
    for rank, (p, o) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, "rank %d of %s (D=%d) failed:\n%s" % (rank, job, dp, o)


def reconfigure(job, dp):
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % job, ok=(202,),
                  json={"to": config(dp), "daemons": DAEMONS}).json()
    st = c.request("GET", r["status"] + "?wait=true").json()
    assert st["state"] == "committed", st


def run(model, store, schedule, tmp, job):
    out = os.path.join(tmp, "%s.pt" % job)
    for i, (dp, until) in enumerate(schedule):
        if i and store == "tenplex":
            reconfigure(job, dp)
        launch(job, model, dp, until, store, out)
    final = torch.load(out, weights_only=False)  # the run's own file (torch 2.6 defaults to True)
    final.pop("args")  # says which store it ran with
    return final


def max_rel_diff(a, b):
    worst = 0.0
    for k in a:
        x, y = a[k].double(), b[k].double()
        if x.is_floating_point():
            worst = max(worst, float((x - y).abs().max() / max(1e-30, float(y.abs().max()))))
    return worst


with tempfile.TemporaryDirectory() as tmp:
    for model in ("cnn", "transformer"):
        job = "%s-%d" % (model, os.getpid())
        elastic = run(model, "tenplex", SCHEDULE, tmp, job)
        files = run(model, "torch:" + os.path.join(tmp, model + "-files"), SCHEDULE, tmp, job + "-files")
        cat.same(files, elastic, "/%s/" % model)  # bit for bit, types too
        static = run(model, "torch:" + os.path.join(tmp, model + "-static"), [(1, 12)], tmp, job + "-static")
        diff = max_rel_diff(elastic["model"], static["model"])
        print(json.dumps({"model": model, "max_rel_diff_vs_static": diff}))
        if model == "transformer":
            assert diff < 1e-9, diff
        else:
            assert diff > 1e-9, "BatchNorm normalises each rank's batch: a DP change cannot equal the static run"
print("OK")
