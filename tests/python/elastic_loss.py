"""Drives examples/elastic_gpt.py across the loss of a worker: one daemon per worker, ranks per worker.

Usage: elastic_loss.py SETUP_JSON

SETUP_JSON: {"daemons": [{"url": ..., "pid": ..., "mount": ...}, ...] (index = worker number, every
daemon started with --peers naming all), "example": path, "dataset": index file, "out": dir,
"steps": N, "saveAt": S, "holdAt": H, "lost": W, "recover": {"tp", "pp", "dp", "devices"}}.

1. a static (1,1,1) run of job ``static`` on worker 0's daemon, to the end;
2. job ``elastic`` with partner copies (``PUT .../tiers {"partners": 1}`` on every daemon) under
   (T,P,D) = (2,2,1), rank r on worker r, each rank talking to its worker's daemon (TENPLEX_ADDR),
   reading the dataset through its worker's FUSE view; it saves generation S and trains on to step H,
   where it holds;
3. once generation S lists ``partners`` on every daemon: worker W's daemon and rank are killed with
   SIGKILL by PID, the ranks of the other workers (whose world is broken) are ended by PID, and the
   failure is reported as a resource change onto the survivors with ``"recover": true``;
4. the new configuration is launched the same way (rank r on its device's worker) and trains from
   generation S to the end.
Prints the resource change's status (JSON) on a line starting with ``recovered:``; any failure raises.
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import tenplex  # noqa: E402

JOB = "elastic"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(setup, job, config, devices, extra, workers):
    """One process per rank; rank r runs on devices[r] = [worker, local] against that worker's daemon."""
    daemons = {str(w): setup["daemons"][w]["url"].split("//", 1)[1] for w in workers}
    placement = dict(config, devices=devices)
    port, procs = free_port(), []
    world = config["tp"] * config["pp"] * config["dp"]
    for rank, (worker, local) in enumerate(devices):
        d = setup["daemons"][worker]
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TENPLEX_ADDR=d["url"], TENPLEX_JOB=job,
                   TENPLEX_TP=str(config["tp"]), TENPLEX_PP=str(config["pp"]), TENPLEX_DP=str(config["dp"]),
                   TENPLEX_CONFIG=json.dumps(placement), TENPLEX_DAEMONS=json.dumps(daemons))
        cmd = [sys.executable, setup["example"], "--dataset", setup["dataset"], "--mount", d["mount"],
               "--out", setup["out"], "--steps", str(setup["steps"])] + extra
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE if rank == 0 else None, text=True))
    return procs


def wait_all(procs, what):
    codes = [p.wait() for p in procs]
    assert codes == [0] * len(procs), "%s: exit statuses %s" % (what, codes)


def kill(pid):
    """SIGKILL by PID; returns once the process is gone (waiting on a pidfd, not polling)."""
    fd = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        select.select([fd], [], [], 30)
    finally:
        os.close(fd)


def await_level(setup, step, level):
    """Polls (every 100 ms, up to 60 s) until generation ``step`` lists ``level`` on every daemon."""
    deadline = time.monotonic() + 60
    while True:
        levels = []
        for d in setup["daemons"]:
            gens = tenplex.Client(d["url"]).request("GET", "/api/v1/jobs/%s/generations" % JOB).json()
            levels.append(next((g.get("levels", []) for g in gens["generations"] if g["step"] == step), []))
        if all(level in x for x in levels):
            return
        assert time.monotonic() < deadline, "generation %d did not reach %s everywhere: %s" % (step, level, levels)
        time.sleep(0.1)  # polling a remote condition


def main(path):
    with open(path) as f:
        setup = json.load(f)
    n, lost = len(setup["daemons"]), setup["lost"]
    wait_all(launch(setup, "static", {"tp": 1, "pp": 1, "dp": 1}, [[0, 0]], [], [0]), "static run")
    for d in setup["daemons"]:
        tenplex.Client(d["url"]).request("PUT", "/api/v1/jobs/%s/tiers" % JOB, json={"partners": 1})
    first = launch(setup, JOB, {"tp": 2, "pp": 2, "dp": 1}, [[w, 0] for w in range(n)],
                   ["--save-at", str(setup["saveAt"]), "--hold-at", str(setup["holdAt"])], range(n))
    for line in first[0].stdout:
        print("rank 0: " + line.rstrip(), flush=True)
        if line.startswith("holding at step"):
            break
    else:
        raise AssertionError("rank 0 ended without reaching the hold point: %s" % first[0].wait())
    await_level(setup, setup["saveAt"], "partners")
    kill(setup["daemons"][lost]["pid"])
    kill(first[lost].pid)
    for p in first:  # the survivors' world is broken: the launcher ends their ranks
        if p.poll() is None:
            kill(p.pid)
        p.wait()
    r = setup["recover"]
    c = tenplex.Client(setup["daemons"][0]["url"])
    started = c.request("POST", "/api/v1/jobs/%s/resources" % JOB, ok=(202,), json={
        "devices": r["devices"], "config": {"tp": r["tp"], "pp": r["pp"], "dp": r["dp"]}, "recover": True}).json()
    status = c.request("GET", started["status"] + "?wait=true").json()
    while status.get("state") in ("stopping", "reconfiguring"):
        status = c.request("GET", started["status"] + "?wait=true").json()
    assert status.get("state") == "done", status
    print("recovered: " + json.dumps(status), flush=True)
    survivors = [w for w in range(n) if w != lost]
    again = launch(setup, JOB, {k: r[k] for k in ("tp", "pp", "dp")}, r["devices"], [], survivors)
    for line in again[0].stdout:
        print("rank 0: " + line.rstrip(), flush=True)
    wait_all(again, "run after the recovery")


if __name__ == "__main__":
    main(sys.argv[1])
