"""A rank for the downtime tests of tenplex run: loads the newest state (or starts at step 0), takes steps
of STEP_SECONDS until STEPS, asks tenplex.should_stop before each step, and saves when told to stop or at
the end. Only the tenplex calls mark the downtime (tenplex.downtime); the script writes its own view to
OUT/times-<segment>-<rank>.json for the test to compare: when it stopped (should_stop said so) and when
its first step after a load ended; and for the pre-started interpreters' tests when its process started
(from /proc, not from the launcher), when the script began and when it ended.
Usage: downtime_rank.py CLIENT_DIR OUT STEPS STEP_SECONDS"""
import json
import os
import sys
import time

began = time.time()


def process_start():
    """When this process started (seconds since the epoch, 10 ms resolution): /proc/self/stat's start time."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, counted from the state (field 3)
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME) + ticks / os.sysconf("SC_CLK_TCK")


sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import tenplex  # noqa: E402

out, steps, step_seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
job, rank = os.environ["TENPLEX_JOB"], int(os.environ["RANK"])
seen = {"segment": int(os.environ["TENPLEX_SEGMENT"]), "rank": rank, "began": began, "process_start": process_start(),
        "pid": os.getpid()}
c = tenplex.Client()
try:
    state, step = tenplex.load(job, rank, c)
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
tenplex.save(state, job, step=step, rank=rank, world=int(os.environ["WORLD_SIZE"]), client=c)
seen["ended"] = time.time()
with open(os.path.join(out, "times-%d-%d.json" % (seen["segment"], rank)), "w") as f:
    json.dump(seen, f)
