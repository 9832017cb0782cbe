"""Checks an elastic run of examples/elastic_gpt.py against a static (1,1,1) run of the same script.

Usage: check_elastic.py ADDR OUT_DIR STATIC_JOB ELASTIC_JOB PNG

* the elastic job's final generation is reconfigured to (1,1,1) by the daemon, loaded, and every
  parameter and Adam moment is compared with the static run's final state: max|a-b| <= 1e-9 *
  max|b| per tensor; optimizer step and settings equal;
* the loss of every step matches within 1e-9 relative;
* data order: both runs read the same global batches in the same order, and every sample exactly
  once (after a lost worker, the steps logged after the recovered generation and before the
  relaunch are superseded by the relaunch's: from the recovered step on, every sample is read
  exactly once);
* writes a loss-vs-step plot (PNG) with the reconfiguration points marked (PNG ``none``: no plot, and
  matplotlib is not needed, e.g. on a GPU host without it).
Prints a JSON summary and OK; any failure raises.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

RTOL = 1e-9


def records(out, job):
    """The job's log; a start at step s (a relaunch after a lost worker, from the recovered
    generation s) supersedes the records of the steps after s logged before it (work that was lost)."""
    with open(os.path.join(out, job + ".jsonl")) as f:
        recs = [json.loads(line) for line in f]
    kept = []
    for r in recs:
        if r.get("event") == "start":
            kept = [x for x in kept if "loss" not in x or x["step"] <= r["step"]]
        kept.append(r)
    return kept


def flat(state, prefix=""):
    out = {}
    for k, v in state.items():
        if isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def main(addr, out, static_job, elastic_job, png):
    c = tenplex.Client(addr)
    # the final state of the elastic run, gathered into one (1,1,1) rank by the daemon
    r = c.request("POST", "/api/v1/jobs/%s/reconfigure" % elastic_job, ok=(202,),
                  json={"to": {"tp": 1, "pp": 1, "dp": 1, "devices": [[0, 0]]}}).json()
    st = c.request("GET", r["status"] + "?wait=true").json()
    assert st["state"] == "committed", st
    elastic, e_step = tenplex.load(elastic_job, 0, c)
    static = tenplex.download("/job/%s/save/0" % static_job, c)
    s_recs, e_recs = records(out, static_job), records(out, elastic_job)
    s_steps = [x for x in s_recs if "loss" in x]
    e_steps = [x for x in e_recs if "loss" in x]
    assert e_step == len(s_steps) == len(e_steps), (e_step, len(s_steps), len(e_steps))

    fe, fs = flat(elastic), flat(static)
    assert sorted(fe) == sorted(fs), set(fe) ^ set(fs)
    worst, worst_name, tensors = 0.0, None, 0
    for name, b in fs.items():
        a = fe[name]
        if isinstance(b, torch.Tensor):
            assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, b.shape)
            scale = float(b.abs().max()) if b.numel() else 0.0
            diff = float((a - b).abs().max()) if b.numel() else 0.0
            rel = diff / scale if scale > 0 else diff
            assert rel <= RTOL, "%s differs by %.3g relative" % (name, rel)
            tensors += 1
            if rel > worst:
                worst, worst_name = rel, name
        else:
            assert a == b, (name, a, b)

    worst_loss = 0.0
    for s, e in zip(s_steps, e_steps):
        assert s["step"] == e["step"]
        rel = abs(s["loss"] - e["loss"]) / abs(s["loss"])
        assert rel <= RTOL, "step %d: loss %.17g vs %.17g" % (s["step"], e["loss"], s["loss"])
        worst_loss = max(worst_loss, rel)
        assert s["ids"] == e["ids"], "step %d read other samples: %s vs %s" % (s["step"], e["ids"], s["ids"])
    ids = [i for x in e_steps for i in x["ids"]]
    assert len(ids) == len(set(ids)), "a sample was read twice"
    assert sorted(ids) == list(range(len(ids))), "not every sample of the epoch was read"

    starts = [x for x in e_recs if x.get("event") == "start"]
    configs = [tuple(x["config"]) for x in starts]
    if png != "none":
        draw(png, s_steps, e_steps, starts)
    print(json.dumps({"steps": len(e_steps), "configs": configs, "tensors_compared": tensors,
                      "max_tensor_rel_diff": worst, "worst_tensor": worst_name, "max_loss_rel_diff": worst_loss,
                      "first_loss": s_steps[0]["loss"], "last_loss": s_steps[-1]["loss"], "plot": png}))
    print("OK")


def draw(png, s_steps, e_steps, starts):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([x["step"] for x in s_steps], [x["loss"] for x in s_steps], color="0.6", lw=3, label="static (1,1,1)")
    ax.plot([x["step"] for x in e_steps], [x["loss"] for x in e_steps], color="C0", lw=1.2, marker=".",
            label="elastic (tenplex)")
    top = max(x["loss"] for x in s_steps) * 1.06
    ax.set_ylim(top=top * 1.01)
    for x in starts:
        if x["step"] > 0:
            ax.axvline(x["step"], color="C3", ls="--", lw=1)
        ax.text(x["step"] + 0.5, top, "(T,P,D)=(%d,%d,%d)" % tuple(x["config"]), color="C3", fontsize=8, va="top")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title("Elastic GPT: reconfigured at steps %s" % [x["step"] for x in starts if x["step"] > 0])
    ax.legend(loc="center right")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    assert os.path.getsize(png) > 10000


if __name__ == "__main__":
    main(*sys.argv[1:6])
