"""examples/elastic_transformer_tp.py against a real daemon (TENPLEX_ADDR): an nn.Transformer with a
description goes elastic across changes of T and D, (T, D) = (1, 2) -> (2, 1) -> (1, 1), the daemon
splitting and joining its parts at each change. Its final state equals, bit for bit, the same schedule
done with torch.save/torch.load files (the example joins and cuts the parts by hand), and a static
one-rank run within 1e-9. Prints OK at the end; any failure raises."""

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
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "elastic_transformer_tp.py")
SCHEDULE = [(1, 2, 4), (2, 1, 8), (1, 1, 12)]  # (T, D, train until step)


def config(tp, dp):
    return {"tp": tp, "pp": 1, "dp": dp, "devices": [[0, i] for i in range(tp * dp)]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(job, tp, dp, until, store, out):
    port = free_port()
    procs = []
    for rank in range(tp * dp):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(tp * dp), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TENPLEX_JOB=job, TENPLEX_CONFIG=json.dumps(config(tp, dp)),
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, EXAMPLE, "--until", str(until), "--store", store, "--out", out],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outputs = [p.communicate(timeout=300)[0].decode() for p in procs]
    for rank, (p, o) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, "rank %d of %s (T=%d, D=%d) failed:\n%s" % (rank, job, tp, dp, o)


def reconfigure(job, tp, dp):
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % job, ok=(202,),
                  json={"to": config(tp, dp), "daemons": DAEMONS}).json()
    st = c.request("GET", r["status"] + "?wait=true").json()
    assert st["state"] == "committed", st


def run(store, schedule, tmp, job):
    out = os.path.join(tmp, "%s.pt" % job)
    for i, (tp, dp, until) in enumerate(schedule):
        if i and store == "tenplex":
            reconfigure(job, tp, dp)
        launch(job, tp, dp, until, store, out)
    final = torch.load(out, weights_only=False)  # the run's own file (torch 2.6 defaults to True)
    final.pop("args")  # says which store it ran with
    return final


with tempfile.TemporaryDirectory() as tmp:
    job = "transformer-tp-%d" % os.getpid()
    elastic = run("tenplex", SCHEDULE, tmp, job)
    files = run("torch:" + os.path.join(tmp, "files"), SCHEDULE, tmp, job + "-files")
    cat.same(files, elastic, "/transformer T change/")  # bit for bit, types too
    static = run("torch:" + os.path.join(tmp, "static"), [(1, 1, 12)], tmp, job + "-static")
    worst = 0.0
    for k, y in static["model"].items():
        x = elastic["model"][k]
        assert x.shape == y.shape, (k, x.shape, y.shape)
        worst = max(worst, float((x - y).abs().max() / max(1e-30, float(y.abs().max()))))
    print(json.dumps({"max_rel_diff_vs_static": worst}))
    assert worst < 1e-9, worst
    assert elastic["step"] == 12 and elastic["scheduler"]["last_epoch"] == 12, elastic["scheduler"]
print("OK")
