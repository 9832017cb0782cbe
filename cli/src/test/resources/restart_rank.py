"""A rank for tenplex run --max-restarts tests: loads the newest state (or starts at step 0), counts
steps to 6, saves and seals step 3, and on its first launch rank 1 fails once step 3 is a complete
generation. Each launch writes what it loaded to OUT/rank-<rank>-<n>.json."""
import json
import os
import sys
import time

sys.path.insert(0, sys.argv[2])
import numpy as np  # noqa: E402
import tenplex  # noqa: E402
from tenplex.checkpoint import generations  # noqa: E402

out, rank, job = sys.argv[1], int(os.environ["RANK"]), os.environ["TENPLEX_JOB"]
launch = 1
while os.path.exists(os.path.join(out, "rank-%d-%d.json" % (rank, launch))):
    launch += 1
c = tenplex.Client()
try:
    state, step = tenplex.load(job, rank, c)
except tenplex.NoCheckpoint:
    state, step = {"w": np.zeros(4)}, 0
with open(os.path.join(out, "rank-%d-%d.json" % (rank, launch)), "w") as f:
    json.dump({"loaded": step, "w": [float(x) for x in state["w"]]}, f)
while step < 6:
    step += 1
    state["w"] = state["w"] + 1
    if step == 3:
        tenplex.save(state, job, step=3, rank=rank, world=int(os.environ["WORLD_SIZE"]), client=c)
        if rank == 1 and launch == 1:
            deadline = time.time() + 60
            while generations(job, c).get("current") != 3:  # every rank has sealed step 3
                assert time.time() < deadline, "step 3 never became complete"
                time.sleep(0.05)
            sys.exit(3)  # a rank fails after the generation is complete
