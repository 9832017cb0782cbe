"""examples/elastic_encoder.py made elastic with no hand-written spec, against a real daemon (TENPLEX_ADDR).

A static run trains the TransformerEncoder classifier under (T,P,D) = (1,1,1) for 30 steps. The
elastic run trains 10 steps under (2,1,2), is reconfigured by the daemon to (1,2,2), trains 10 more,
is reconfigured to (4,1,1) and trains to step 30. No request carries a model spec: the one the job's
first save stored (``tenplex.describe`` of the module, the example's rules file and the shipped
transformer rules) is what every reconfiguration uses. A second elastic run stores only the rules
(``save(rules=...)``): the daemon infers the model from the shards saved under (2,1,2), and the
inferred model must equal the described one. Each elastic run's final state, gathered to
(1,1,1) by the daemon, must equal the static run's within 1e-9 relative per tensor (parameters, the
position buffer, the tied copy, Adam moments; fp64), every step's loss too, and the optimizer's step
and settings exactly. Prints a JSON summary and OK; any failure raises."""

import json
import os
import socket
import subprocess
import sys
import tempfile
from urllib.parse import urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

EXAMPLE = os.path.join(HERE, "..", "..", "examples", "elastic_encoder.py")
ADDR = os.environ["TENPLEX_ADDR"]
U = urlparse(ADDR)
DAEMONS = {"0": "%s:%d" % (U.hostname, U.port)}
RTOL = 1e-9
c = tenplex.Client(ADDR)


def config(tp, pp, dp):
    return {"tp": tp, "pp": pp, "dp": dp, "devices": [[0, i] for i in range(tp * pp * dp)]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(job, tp, pp, dp, until, out, store="spec"):
    """Launches every rank of (tp, pp, dp) against the daemon; they train to ``until`` and save."""
    world, port = tp * pp * dp, free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TENPLEX_TP=str(tp), TENPLEX_PP=str(pp), TENPLEX_DP=str(dp),
                   TENPLEX_JOB=job, TENPLEX_CONFIG=json.dumps(config(tp, pp, dp)), OMP_NUM_THREADS="1",
                   TENPLEX_DAEMONS=json.dumps(DAEMONS))
        procs.append(subprocess.Popen([sys.executable, EXAMPLE, "--until", str(until), "--out", out, "--store", store],
                                      env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outputs = [p.communicate(timeout=600)[0].decode() for p in procs]
    for rank, (p, o) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, "rank %d of %s (%d,%d,%d) failed:\n%s" % (rank, job, tp, pp, dp, o)


def reconfigure(job, tp, pp, dp):
    """Reconfigures the job's newest generation; the request names only the target."""
    body = {"to": config(tp, pp, dp), "daemons": DAEMONS}
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % job, ok=(202,), json=body).json()
    st = c.request("GET", r["status"] + "?wait=true").json()
    assert st["state"] == "committed", st


def flat(state, prefix=""):
    out = {}
    for k, v in state.items():
        if isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def losses(out, job):
    with open(os.path.join(out, job + ".jsonl")) as f:
        return [json.loads(line) for line in f if '"loss"' in line]


def compare(elastic, static):
    fe, fs = flat(elastic), flat(static)
    assert sorted(fe) == sorted(fs), set(fe) ^ set(fs)
    worst, tensors = 0.0, 0
    for name, b in fs.items():
        a = fe[name]
        if not isinstance(b, torch.Tensor):
            assert a == b, (name, a, b)
            continue
        assert a.shape == b.shape and a.dtype == b.dtype == torch.float64, (name, a.shape, b.shape, a.dtype)
        scale = float(b.abs().max())
        rel = float((a - b).abs().max()) / scale if scale > 0 else float((a - b).abs().max())
        assert rel <= RTOL, "%s differs by %.3g relative" % (name, rel)
        worst, tensors = max(worst, rel), tensors + 1
    return worst, tensors


def elastic(job, out, store):
    """(2,1,2) for 10 steps, (1,2,2) to 20, (4,1,1) to 30; then gathered to (1,1,1)."""
    run(job, 2, 1, 2, 10, out, store)
    if store == "rules":  # only the rules are stored: the model is inferred from the (2,1,2) shards
        c.request("GET", tenplex.wire.routes.files_route(tenplex.wire.routes.model_file(job)), ok=(404,))
        assert json.loads(tenplex.wire.transfer.read_file(c, tenplex.wire.routes.rules_file(job)))["params"] == {"vocab": 50}
    reconfigure(job, 1, 2, 2)
    run(job, 1, 2, 2, 20, out, store)
    reconfigure(job, 4, 1, 1)
    run(job, 4, 1, 1, 30, out, store)
    spec = json.loads(tenplex.wire.transfer.read_file(c, "/job/%s/model.json" % job))
    reconfigure(job, 1, 1, 1)
    return spec


def check_equal(job, static, out):
    """The job's state at step 30, gathered to (1,1,1), and every loss equal the static run's."""
    elastic, e_step = tenplex.load(job, 0, c)
    assert e_step == 30, e_step
    assert elastic["model"]["embed.weight"].shape == (56, 32), elastic["model"]["embed.weight"].shape  # 50 -> 8x7
    assert torch.equal(elastic["model"]["embed.weight"][50:], torch.zeros(6, 32, dtype=torch.float64))
    worst, tensors = compare(elastic, static)
    s_loss, e_loss = losses(out, "enc-static"), losses(out, job)
    assert [x["step"] for x in s_loss] == [x["step"] for x in e_loss] == list(range(1, 31))
    worst_loss = max(abs(s["loss"] - e["loss"]) / abs(s["loss"]) for s, e in zip(s_loss, e_loss))
    assert worst_loss <= RTOL, worst_loss
    configs = [x["config"] for x in e_loss if x["step"] in (1, 11, 21)]
    assert configs == [[2, 1, 2], [1, 2, 2], [4, 1, 1]], configs
    return worst, tensors, worst_loss, configs


def main():
    out = tempfile.mkdtemp(prefix="enc-")
    run("enc-static", 1, 1, 1, 30, out)
    static, s_step = tenplex.load("enc-static", 0, c)
    assert s_step == 30, s_step
    s_loss = losses(out, "enc-static")
    assert s_loss[-1]["loss"] < s_loss[0]["loss"], "the loss did not fall"

    spec = elastic("enc-elastic", out, "spec")
    names = {t["name"]: t for t in spec["tensors"]}
    assert names["encoder.layers.3.linear1.weight"]["partition"] == {"kind": "split", "dim": 0}, names
    assert names["embed.weight"]["partition"]["kind"] == "vocab" and names["pos"]["stage"] == "first"
    assert spec["ties"]["lm_head.weight"] == "embed.weight", spec["ties"]
    assert spec["ties"]["optimizer.exp_avg.lm_head.weight"] == "optimizer.exp_avg.embed.weight", spec["ties"]
    worst, tensors, worst_loss, configs = check_equal("enc-elastic", static, out)

    # the same job saving only its rules: the daemon infers the model at the first change
    inferred = elastic("enc-inferred", out, "rules")
    described = {t["name"]: (t["shape"], t["dtype"], t["partition"], t.get("stage"), t.get("layer"))
                 for t in spec["tensors"]}
    got = {t["name"]: (t["shape"], t["dtype"], t["partition"], t.get("stage"), t.get("layer"))
           for t in inferred["tensors"]}
    assert got == described, {k: (got.get(k), described.get(k)) for k in set(got) | set(described)
                              if got.get(k) != described.get(k)}
    assert inferred["ties"] == spec["ties"] and inferred["layers"] == spec["layers"], (inferred["ties"], spec["ties"])
    i_worst, i_tensors, i_worst_loss, _ = check_equal("enc-inferred", static, out)

    print(json.dumps({"steps": 30, "configs": configs, "tensors_compared": tensors, "max_tensor_rel_diff": worst,
                      "max_loss_rel_diff": worst_loss, "inferred_max_tensor_rel_diff": i_worst,
                      "inferred_max_loss_rel_diff": i_worst_loss, "first_loss": s_loss[0]["loss"],
                      "last_loss": s_loss[-1]["loss"]}))
    print("OK")


main()
