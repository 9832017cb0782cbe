"""tenplex.launch (the per-pod launcher of Kubernetes jobs) against a real daemon (TENPLEX_ADDR).

This script plays the Kubernetes adapter's part (it publishes assignments and raises and clears
the stop flag, as the adapter and the daemon's resource change do); the launcher and its ranks are
real processes. Launch 1 runs two ranks under (1,1,2); the ranks stop on the flag and seal step 5;
the launcher, which started two interpreters ahead when the flag rose, waits for an assignment for
generation 5 and relaunches one rank under (1,1,1) in one of them (the other exits); that run ends the
job. Prints OK at the end; any failure raises."""

import atexit
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, PKG)

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "k"
HOSTPORT = ADDR.split("://")[-1]

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, %(pkg)r)
import tenplex
out, rank = sys.argv[1], int(os.environ["RANK"])
launch = 2 if os.path.exists(os.path.join(out, "rank-%%d-1.json" %% rank)) else 1
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TENPLEX_JOB", "TENPLEX_TP",
        "TENPLEX_PP", "TENPLEX_DP", "TENPLEX_CONFIG", "TENPLEX_DAEMONS", "TORCHELASTIC_USE_AGENT_STORE",
        "TORCHELASTIC_RESTART_COUNT"]
with open(os.path.join(out, "rank-%%d-%%d.json" %% (rank, launch)), "w") as f:
    json.dump(dict({k: os.environ.get(k) for k in keys}, pid=os.getpid()), f)
import torch, torch.distributed as dist
dist.init_process_group("gloo")  # env://, a client of the store the launcher hosts
t = torch.ones(1)
dist.all_reduce(t)
assert int(t[0]) == int(os.environ["WORLD_SIZE"]), t
dist.destroy_process_group()
if launch == 1:
    deadline = time.time() + 60
    while not tenplex.should_stop():  # training steps would run here
        assert time.time() < deadline, "no stop flag"
        time.sleep(0.02)
    tenplex.save(None, step=5)  # seals as an empty rank; the daemon learns of it through TENPLEX_DAEMONS too
'''


def assignment(generation, dp, ranks):
    devices = [[0, i] for i in range(dp)]
    return {"job": JOB, "generation": generation, "config": {"tp": 1, "pp": 1, "dp": dp, "devices": devices},
            "worldSize": dp, "devicesPerWorker": dp, "masterAddr": "127.0.0.1",
            "workers": [{"worker": 0, "node": "node-a", "address": HOSTPORT, "devices": dp}],
            "pods": [{"pod": "p0", "node": "node-a", "worker": 0, "local": ranks, "ranks": ranks}]}


def publish(a):
    tenplex.put_file("/job/%s/kubernetes/assignment.json" % JOB, json.dumps(a), c)


def wait_until(what, cond, timeout=60):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = free_port()


STARTED = []


@atexit.register
def _end_launchers():
    """A failed check leaves no launcher or rank behind (they would hold this script's stderr open)."""
    for p in STARTED:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # its own session: the launcher, its ranks, interpreters ahead
        except ProcessLookupError:
            pass


def launcher(out, *extra, script="child.py"):
    env = dict(os.environ, PYTHONPATH=PKG, TENPLEX_JOB=JOB)
    child = os.path.join(out, script)
    p = subprocess.Popen([sys.executable, "-m", "tenplex.launch", "--pod", "p0", "--poll", "0.02",
                          "--master-port", str(PORT), *extra, "--", sys.executable, child, out], env=env,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    STARTED.append(p)
    return p


def read(out, rank, launch):
    with open(os.path.join(out, "rank-%d-%d.json" % (rank, launch))) as f:
        return json.load(f)


with tempfile.TemporaryDirectory() as out:
    with open(os.path.join(out, "child.py"), "w") as f:
        f.write(CHILD % {"pkg": os.path.abspath(PKG)})
    publish(assignment(None, 2, [0, 1]))
    p = launcher(out)
    wait_until("launch 1", lambda: all(os.path.exists(os.path.join(out, "rank-%d-1.json" % r)) for r in (0, 1)))
    c.request("POST", "/api/v1/jobs/%s/stop" % JOB, json={"reason": "test: resources change"})
    gens = lambda: c.request("GET", "/api/v1/jobs/%s/generations" % JOB).json()  # noqa: E731
    wait_until("generation 5", lambda: gens().get("current") == 5)
    c.request("DELETE", "/api/v1/jobs/%s/stop" % JOB)  # as the resource change does before the adapter publishes
    publish(assignment(5, 1, [0]))
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    first = [read(out, r, 1) for r in (0, 1)]
    assert [e["RANK"] for e in first] == ["0", "1"] and [e["LOCAL_RANK"] for e in first] == ["0", "1"], first
    assert all(e["WORLD_SIZE"] == "2" and e["TENPLEX_DP"] == "2" and e["TENPLEX_TP"] == "1" for e in first), first
    assert json.loads(first[1]["TENPLEX_CONFIG"])["devices"] == [[0, 0], [0, 1]], first
    assert json.loads(first[0]["TENPLEX_DAEMONS"]) == {"0": HOSTPORT}, first
    assert first[0]["MASTER_ADDR"] == "127.0.0.1" and first[0]["MASTER_PORT"] == str(PORT), first
    # the launcher (rank 0's pod) hosted the store before the ranks started; they met in it as clients,
    # under a key prefix of their assignment
    assert "hosting the rendezvous store at 127.0.0.1:%d" % PORT in err, err
    assert all(e["TORCHELASTIC_USE_AGENT_STORE"] == "True" and e["TORCHELASTIC_RESTART_COUNT"] == "gNone-cNone"
               for e in first), first
    second = read(out, 0, 2)
    assert second["WORLD_SIZE"] == "1" and second["TENPLEX_DP"] == "1", second
    assert second["TORCHELASTIC_RESTART_COUNT"] == "g5-cNone", second
    assert not os.path.exists(os.path.join(out, "rank-1-2.json")), "rank 1 is gone after the change"
    assert "launch 1: ranks [0, 1] of 2 under (T,P,D)=(1,1,2), generation None" in err, err
    assert "the job's resources are changing; waiting for the next assignment" in err, err
    assert "launch 2: ranks [0] of 1 under (T,P,D)=(1,1,1), generation 5" in err, err
    assert err.strip().endswith("tenplex.launch: the job ended"), err
    # the stop flag made the launcher start two interpreters ahead: rank 0 of launch 2 ran in one of them
    # (it imported torch while the ranks saved), and the other was told to exit
    m = re.search(r"pre-started 2 interpreter\(s\) for the next launch \(pids (\d+), (\d+)\)", err)
    assert m, err
    assert second["pid"] in (int(m.group(1)), int(m.group(2))), (second["pid"], m.groups())
    assert "1 pre-started interpreter(s) not needed, told to exit" in err, err
    assert "Traceback" not in err, err

    # a pod being deleted (a JobSet's removed index, a drain, Kueue's suspension): SIGTERM is not passed
    # on, the ranks save for the change the adapter raised the flag for, and the launcher exits 143
    # without relaunching them; never 0, which a Job would count as a completed index (the JobSet's
    # podFailurePolicy ignores 143: no completion, no failure)
    with open(os.path.join(out, "term.py"), "w") as f:
        f.write("import os, sys, time\nsys.path.insert(0, %r)\nimport tenplex\n"
                "open(os.path.join(sys.argv[1], 'term-%%d' %% os.getpid()), 'w').close()\n"
                "deadline = time.time() + 60\n"
                "while not tenplex.should_stop():\n    assert time.time() < deadline\n    time.sleep(0.02)\n"
                "tenplex.save(None, step=9)\n" % os.path.abspath(PKG))
    publish(assignment(5, 1, [0]))
    p = launcher(out, script="term.py")
    started = lambda: [n for n in os.listdir(out) if n.startswith("term-")]  # noqa: E731
    wait_until("the rank", lambda: len(started()) == 1)
    p.send_signal(signal.SIGTERM)
    c.request("POST", "/api/v1/jobs/%s/stop" % JOB, json={"reason": "test: the pod's index is removed"})
    wait_until("generation 9", lambda: gens().get("current") == 9)
    c.request("DELETE", "/api/v1/jobs/%s/stop" % JOB)
    publish(assignment(9, 1, [0]))  # an assignment that names this pod again: not taken, the pod is going
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "pod terminating; ranks exited (status 143)" in err, (p.returncode, err)
    assert len(started()) == 1, "the rank was not relaunched: %s" % started()
    # SIGTERM while waiting for an assignment that names the pod: exit 143 before any launch
    publish(dict(assignment(9, 1, [0]), pods=[]))
    p = launcher(out)
    first = p.stderr.readline()  # logged once its SIGTERM handler is in place
    assert "waiting: pod p0 is not in the assignment" in first, first
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "terminating before a launch" in err, (p.returncode, first + err)

    # a rank that fails ends the launcher with its status; bad use is a clear error
    with open(os.path.join(out, "child.py"), "w") as f:
        f.write("import sys; sys.exit(3)\n")
    publish(assignment(9, 1, [0]))
    p = launcher(out)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 3 and "a rank exited with 3" in err, (p.returncode, err)
    assert "pre-started" not in err, err  # the stop flag is down: nothing ahead
    r = subprocess.run([sys.executable, "-m", "tenplex.launch", "--job", JOB, "--pod", "p0"],
                       env=dict(os.environ, PYTHONPATH=PKG), stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2 and "a command after -- are required" in r.stderr, r.stderr

print("OK")
