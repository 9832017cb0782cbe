"""Checks a live run of examples/elastic_gpt.py against a relaunched run of the same schedule.

Usage: check_live.py ADDR OUT_DIR RELAUNCHED_JOB LIVE_JOB

Both jobs' final generations, reconfigured to (1,1,1) by check_elastic.py (run it first), are loaded: every parameter,
Adam moment and optimizer value must be bit-identical, and so must the loss of every step and the
samples each step read. (check_elastic.py compares each of them with a static run, within 1e-9.)
Also prints the process ids rank 0 logged at each start: a live run keeps its process (one id), a
relaunched one starts a new process at each reconfiguration. Prints a JSON summary and OK; any
failure raises."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from check_elastic import flat, records  # noqa: E402


def final_state(c, job):
    """The job's final state as one (1,1,1) rank (check_elastic.py reconfigured it so, and runs first)."""
    state, step = tenplex.load(job, 0, c, config={"tp": 1, "pp": 1, "dp": 1})
    return flat(state), step


def main(addr, out, relaunched_job, live_job):
    c = tenplex.Client(addr)
    fr, r_step = final_state(c, relaunched_job)
    fl, l_step = final_state(c, live_job)
    assert r_step == l_step, (r_step, l_step)
    assert sorted(fr) == sorted(fl), set(fr) ^ set(fl)
    for name, b in fr.items():
        a = fl[name]
        if isinstance(b, torch.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape, (name, a.shape, b.shape)
            assert torch.equal(a, b), "%s differs: max |live - relaunched| = %.3g" % (name, float((a - b).abs().max()))
        else:
            assert a == b, (name, a, b)
    r_recs, l_recs = records(out, relaunched_job), records(out, live_job)
    r_steps = [x for x in r_recs if "loss" in x]
    l_steps = [x for x in l_recs if "loss" in x]
    assert len(r_steps) == len(l_steps) == l_step, (len(r_steps), len(l_steps), l_step)
    for r, lv in zip(r_steps, l_steps):
        assert r["step"] == lv["step"] and r["loss"] == lv["loss"], ("loss", r, lv)
        assert r["ids"] == lv["ids"] and r["config"] == lv["config"], ("samples", r, lv)
    starts = lambda recs: [x for x in recs if x.get("event") == "start"]  # noqa: E731
    print(json.dumps({"steps": l_step, "tensors": len(fr), "configs": [x["config"] for x in starts(l_recs)],
                      "live_pids": [x.get("pid") for x in starts(l_recs)],
                      "relaunched_pids": [x.get("pid") for x in starts(r_recs)]}))
    print("OK")


if __name__ == "__main__":
    main(*sys.argv[1:5])
