"""A rank for tenplex resize tests: loads the newest state (or starts at step 0), adds 1 to every
element each step up to STEPS (a step every 20 ms), asks tenplex.should_stop before each step and
saves and exits when told to; with a fourth argument N it also saves every N steps and goes on.
Each launch writes OUT/launch-<world>-<rank>.json (the step it loaded), the end
OUT/end-<world>-<rank>.json (the step and the state: every element, or its least and greatest for a
state of more than 64; RESIZE_RANK_ELEMENTS sets its size, 4 by default)."""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[2])
import numpy as np  # noqa: E402
import tenplex  # noqa: E402

out, steps = sys.argv[1], int(sys.argv[3])
every = int(sys.argv[4]) if len(sys.argv) > 4 else 0
rank, world, job = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), os.environ["TENPLEX_JOB"]
c = tenplex.Client()
try:
    state, step = tenplex.load(job, rank, c)
except tenplex.NoCheckpoint:
    state, step = {"w": np.zeros(int(os.environ.get("RESIZE_RANK_ELEMENTS", "4")))}, 0
with open(os.path.join(out, "launch-%d-%d.json" % (world, rank)), "w") as f:
    json.dump({"loaded": step}, f)
while step < steps:
    if tenplex.should_stop(job, step, client=c):
        tenplex.save(state, job, step=step, rank=rank, world=world, client=c)
        sys.exit(0)
    step += 1
    state["w"] = state["w"] + 1
    if every and step % every == 0:
        tenplex.save(state, job, step=step, rank=rank, world=world, client=c)
    time.sleep(0.02)
with open(os.path.join(out, "end-%d-%d.json" % (world, rank)), "w") as f:
    w = state["w"] if state["w"].size <= 64 else [state["w"].min(), state["w"].max()]
    json.dump({"step": step, "w": [float(x) for x in w]}, f)
