"""Check 5: the README's elastic example (examples/elastic_gpt.py under ``tenplex run`` with the
README's schedule: (2,2,1) -> (1,1,4) -> (4,1,1) -> (1,2,2)) with its tensors on ``--device``, its
dataset view read over REST (a GPU host may have no FUSE), checked against a static (1,1,1) run of the
same script by tests/python/check_elastic.py (parameters, Adam state and every loss within 1e-9, the
same samples in the same order)."""

import json
import os
import subprocess
import sys
import time

from checkutil import arguments, exit_with, main

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEDULE = [{"step": 0, "size": 4, "tp": 2, "pp": 2, "dp": 1}, {"step": 15, "size": 4, "tp": 1, "pp": 1, "dp": 4},
            {"step": 30, "size": 4, "tp": 4, "pp": 1, "dp": 1}, {"step": 45, "size": 4, "tp": 1, "pp": 2, "dp": 2}]


def script(name):
    """A script of the pack (gpu/), else of the repository it comes from."""
    for p in (os.path.join(HERE, name), os.path.join(HERE, "..", "..", "examples", name),
              os.path.join(HERE, "..", "..", "tests", "python", name)):
        if os.path.exists(p):
            return os.path.abspath(p)
    raise FileNotFoundError(name)


def tenplex_run(a, job, schedule, work, log):
    path = os.path.join(work, job + "-schedule.json")
    with open(path, "w") as f:
        json.dump(schedule, f)
    cmd = a.tenplex + ["run", "--addr", a.addr, "--job", job, "--schedule", path, "--",
                       sys.executable, script("elastic_gpt.py"), "--dataset", os.path.join(work, "data", "index.txt"),
                       "--out", os.path.join(work, "out"), "--steps", "60", "--device", a.device, "--plot", "none"]
    t = time.perf_counter()
    with open(log, "a") as out:
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, OMP_NUM_THREADS="1"))
    if p.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError("tenplex run of %s exited %d:\n%s" % (job, p.returncode, tail))
    return time.perf_counter() - t


def run(a):
    work = a.work
    os.makedirs(work, exist_ok=True)
    subprocess.run([sys.executable, script("elastic_gpt.py"), "--make-data", os.path.join(work, "data")], check=True,
                   stdout=subprocess.DEVNULL)
    log = os.path.join(work, "elastic-run.log")
    tag = "%d" % os.getpid()
    static, elastic = "gpu-static-" + tag, "gpu-elastic-" + tag
    t_static = tenplex_run(a, static, [{"step": 0, "size": 1}], work, log)
    t_elastic = tenplex_run(a, elastic, SCHEDULE, work, log)
    with open(log) as f:
        text = f.read()
    assert "tenplex run: 3 reconfiguration(s)" in text, text[-2000:]
    p = subprocess.run([sys.executable, script("check_elastic.py"), a.addr, os.path.join(work, "out"), static, elastic,
                        "none"], capture_output=True, text=True)
    if p.returncode != 0 or "OK" not in p.stdout:
        raise RuntimeError("check_elastic.py: %s %s" % (p.stdout[-1500:], p.stderr[-1500:]))
    got = json.loads(p.stdout.strip().splitlines()[-2])
    got.update({"static_run_s": round(t_static, 1), "elastic_run_s": round(t_elastic, 1)})
    return ("README schedule on %s: %d steps, configs %s, %d tensors within %.2g relative of the static run, losses "
            "within %.2g, same samples (elastic %.0f s, static %.0f s)"
            % (a.device, got["steps"], [tuple(c) for c in got["configs"]], got["tensors_compared"],
               got["max_tensor_rel_diff"], got["max_loss_rel_diff"], t_elastic, t_static), got)


def extra(ap):
    ap.add_argument("--work", required=True, help="a directory below one of the daemon's data roots")
    ap.add_argument("--tenplex", required=True, type=json.loads, help="the tenplex command, as a JSON list")


if __name__ == "__main__":
    exit_with(main(run, arguments(__doc__.split("\n")[0], extra)))
