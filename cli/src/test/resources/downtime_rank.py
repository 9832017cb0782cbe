"""A rank for the downtime tests of tenplex run: loads the newest state (or starts at step 0), takes steps
of STEP_SECONDS until STEPS, asks tenplex.should_stop before each step, and saves when told to stop or at
the end. Only the tenplex calls mark the downtime (tenplex.downtime); this script marks nothing itself.
Usage: downtime_rank.py CLIENT_DIR STEPS STEP_SECONDS"""
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import tenplex  # noqa: E402

steps, step_seconds = int(sys.argv[2]), float(sys.argv[3])
job, rank = os.environ["TENPLEX_JOB"], int(os.environ["RANK"])
c = tenplex.Client()
try:
    state, step = tenplex.load(job, rank, c)
except tenplex.NoCheckpoint:
    state, step = {"w": np.zeros(1024)}, 0
while step < steps:
    if tenplex.should_stop(job, step, client=c):
        break
    time.sleep(step_seconds)  # the step's work
    state["w"] = state["w"] + 1
    step += 1
tenplex.save(state, job, step=step, rank=rank, world=int(os.environ["WORLD_SIZE"]), client=c)
