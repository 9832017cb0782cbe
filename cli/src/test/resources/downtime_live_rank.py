"""A live rank for the downtime tests of tenplex run --live: downtime_rank.py's steps inside
tenplex.elastic(train), so that a kept rank goes through every reconfiguration in one process. Only the
tenplex calls mark the downtime; the script writes its own view to OUT/times-<segment>-<rank>.json per
configuration it trains under: when it stopped (should_stop said so) and when its first step after a
load ended.
Usage: downtime_live_rank.py CLIENT_DIR OUT STEPS STEP_SECONDS"""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import tenplex  # noqa: E402

out, steps, step_seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
job = os.environ["TENPLEX_JOB"]


def train(cfg):
    seen = {"segment": int(os.environ["TENPLEX_SEGMENT"]), "rank": cfg.rank, "pid": os.getpid()}
    c = tenplex.Client()
    try:
        state, step = tenplex.load(job, cfg.rank, c)
        seen["loaded"] = step
    except tenplex.NoCheckpoint:
        state, step = {"w": np.zeros(1024)}, 0
    while step < steps:
        if tenplex.should_stop(job, step, client=c):
            seen["stop"] = time.time()
            break
        time.sleep(step_seconds)  # the step's work
        state["w"] = state["w"] + 1
        step += 1
        if "loaded" in seen and "first_step" not in seen:
            seen["first_step"] = time.time()
    tenplex.save(state, job, step=step, rank=cfg.rank, world=cfg.world, client=c)
    with open(os.path.join(out, "times-%d-%d.json" % (seen["segment"], cfg.rank)), "w") as f:
        json.dump(seen, f)


tenplex.elastic(train, backend="gloo")
