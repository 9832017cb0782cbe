"""tenplex.launch --live (the per-pod launcher in live mode) against a real daemon (TENPLEX_ADDR).

Two "pods" are two launcher processes on this machine (p0 and p1, devices 0-1 and 2-3 of one node);
this script plays the Kubernetes adapter's part: it posts each resource change to the daemon (which
raises the stop flag, waits for the ranks' saves, moves and commits) and then publishes the assignment,
as the adapter does. The ranks run the real ``tenplex.elastic`` with a tiny replicated state ``w``
(every step adds 1 to it, so a rank that loaded step s holds ``w == s``). The job goes
2 ranks on p0 -> (a) 4 ranks, p1 adds ranks 2-3: ranks 0-1 keep their processes -> (b) 2 ranks: ranks
2-3 leave with exit status 0, ranks 0-1 keep their processes -> (b2) a change that fails after the ranks
saved (the adapter publishes the last assignment again for that generation): ranks 0-1 keep their
processes and load what they saved -> (c) 3 ranks with rank 1 moved to p1:
every rank is relaunched, and both launchers say why -> (d) 2 ranks while rank 1 exits with 3 after its
save: every rank is relaunched from the committed generation (nothing saved is lost) -> (e) 3 ranks while
the added rank 2 fails before the new group forms: every rank is relaunched -> (f) 2 ranks while a hostile
process that reaches the store sets the role the ranks wait for (an unsigned relaunch), the decision for
the new assignment and its abort: every rank refuses the role (exits non-zero, none exits 0 as relaunched),
the launchers ignore the forged decision and abort and relaunch every rank from the committed generation
-> the job ends and both launchers exit 0. Prints OK at the end; any failure raises."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.abspath(os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, PKG)

import tenplex  # noqa: E402
from tenplex.launchers import pod_roles  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "klive-%d" % os.getpid()
HOSTPORT = ADDR.split("://")[-1]

CHILD = r'''
import json, os, sys, time
sys.path.insert(0, %(pkg)r)
import torch, torch.distributed as dist
import tenplex
out = sys.argv[1]
start_fault = os.path.join(out, "die-start-%%s" %% os.environ["RANK"])
if os.path.exists(start_fault):  # injected: this rank's process fails before it joins the group
    os.remove(start_fault)
    print("rank %%s: exiting with 4 at start (injected)" %% os.environ["RANK"], flush=True)
    sys.exit(4)

def train(cfg):
    try:
        state, step = tenplex.load()
        w, loaded = torch.as_tensor(state["w"]).clone(), step
    except tenplex.NoCheckpoint:
        w, step, loaded = torch.zeros(4, dtype=torch.float64), 0, None
    rec = {"pid": os.getpid(), "rank": cfg.rank, "world": cfg.world, "dp": cfg.dp, "loaded": loaded,
           "w": w.tolist(), "reconfigurations": cfg.reconfigurations}
    with open(os.path.join(out, "calls-%%d.jsonl" %% cfg.rank), "a") as f:
        f.write(json.dumps(rec) + "\n")
    while True:
        w += 1  # one training step
        step += 1
        end = torch.tensor([1 if os.path.exists(os.path.join(out, "END")) else 0])
        dist.all_reduce(end, op=dist.ReduceOp.MAX)  # every rank ends at the same step
        if int(end[0]):
            return "done"
        if tenplex.should_stop(step=step):
            tenplex.save({"w": w}, step=step)
            die = os.path.join(out, "die-%%d" %% cfg.rank)
            if os.path.exists(die):  # injected: this rank dies after its save, while the change runs
                os.remove(die)
                print("rank %%d: exiting with 3 after its save (injected)" %% cfg.rank, flush=True)
                os._exit(3)
            return "stopped"
        time.sleep(0.01)

tenplex.elastic(train)
'''


HOSTILE = r'''
import datetime, sys
import torch.distributed as dist
try:  # torch 2.x built without libuv (Debian's) refuses its default backend
    s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), None, False, datetime.timedelta(seconds=30), use_libuv=False)
except TypeError:  # torch 1.13: no such option
    s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), None, False, datetime.timedelta(seconds=30))
for op, key, value in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3]):
    s.set(key, value) if op == "set" else s.add(key, int(value))
print("hostile: done", flush=True)
'''


def hostile(port, *ops):
    """A process that is neither a launcher nor a rank: ``ops`` (op, key, value) against the store."""
    out = subprocess.run([sys.executable, "-c", HOSTILE, str(port)] + [str(x) for op in ops for x in op],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "hostile: done" in out.stdout, out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assignment(generation, change, pods):
    """``pods``: [(pod, ranks, local devices)] on one node (worker 0)."""
    world = sum(len(r) for _, r, _ in pods)
    return {"job": JOB, "change": change, "generation": generation,
            "config": {"tp": 1, "pp": 1, "dp": world, "devices": [[0, i] for i in range(world)]},
            "worldSize": world, "devicesPerWorker": 4, "masterAddr": "127.0.0.1",
            "workers": [{"worker": 0, "node": "node-a", "address": HOSTPORT, "devices": world}],
            "pods": [{"pod": p, "node": "node-a", "worker": 0, "local": loc, "ranks": r} for p, r, loc in pods]}


def publish(a):
    tenplex.put_file("/job/%s/kubernetes/assignment.json" % JOB, json.dumps(a), c)


def wait_until(what, cond, timeout=180, launchers=()):
    deadline = time.time() + timeout
    while not cond():
        for name, p in launchers:
            assert p.poll() is None, "launcher %s exited with %s while waiting for %s" % (name, p.returncode, what)
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def change(world, launchers):
    """A resource change to ``world`` data-parallel ranks, as the adapter posts it; its generation and id."""
    r = c.request("POST", "/api/v1/jobs/%s/resources" % JOB, ok=(202,), json={
        "size": world, "devicesPerWorker": 4, "config": {"tp": 1, "pp": 1, "dp": world},
        "saveTimeoutSeconds": 120}).json()
    box = {}

    def done():
        box["st"] = c.request("GET", "/api/v1/jobs/%s/resources/%s" % (JOB, r["id"])).json()
        return box["st"]["state"] not in ("stopping", "reconfiguring", "pending", "planning", "moving")

    wait_until("resource change %s" % r["id"], done, launchers=launchers)
    assert box["st"]["state"] == "done", box["st"]
    return box["st"]["generation"], r["id"]


def failing_change(launchers):
    """A resource change that fails after the ranks saved for it (a second worker's daemon does not
    answer: the reconfiguration's check finds it); the generation they saved and the change's id."""
    r = c.request("POST", "/api/v1/jobs/%s/resources" % JOB, ok=(202,), json={
        "size": 8, "devicesPerWorker": 4, "config": {"tp": 1, "pp": 1, "dp": 8}, "saveTimeoutSeconds": 120,
        "daemons": {"0": HOSTPORT, "1": "127.0.0.9:9"}}).json()
    box = {}

    def done():
        box["st"] = c.request("GET", "/api/v1/jobs/%s/resources/%s" % (JOB, r["id"])).json()
        return box["st"]["state"] not in ("stopping", "reconfiguring", "pending", "planning", "moving")

    wait_until("resource change %s" % r["id"], done, launchers=launchers)
    assert box["st"]["state"] == "failed" and "unreachable" in box["st"].get("error", ""), box["st"]
    assert box["st"]["generation"] is not None, box["st"]
    return box["st"]["generation"], r["id"]


def calls(out, rank):
    path = os.path.join(out, "calls-%d.jsonl" % rank)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def log(out, pod):
    with open(os.path.join(out, "launcher-%s.log" % pod)) as f:
        return f.read()


def check_loaded(out, ranks, generation, world):
    """Each rank's newest call loaded ``generation`` (its step) under ``world`` and holds w == step."""
    for r in ranks:
        last = calls(out, r)[-1]
        assert last["world"] == world and last["loaded"] == generation, (r, last, generation)
        assert last["w"] == [float(generation)] * 4, ("the state saved at step %s came back as %s" % (generation, last))


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_live_pod_launchers():
    with tempfile.TemporaryDirectory() as out:
        child = os.path.join(out, "child.py")
        with open(child, "w") as f:
            f.write(CHILD % {"pkg": PKG})
        port = free_port()
        env = dict(os.environ, PYTHONPATH=PKG, TENPLEX_JOB=JOB, TENPLEX_LIVE_TIMEOUT="300",
                   TENPLEX_REGROUP_TIMEOUT="60", OMP_NUM_THREADS="1")
        launchers = []
        try:
            publish(assignment(None, None, [("p0", [0, 1], [0, 1])]))
            for pod in ("p0", "p1"):
                logf = open(os.path.join(out, "launcher-%s.log" % pod), "w")
                launchers.append((pod, subprocess.Popen(
                    [sys.executable, "-m", "tenplex.launch", "--live", "--pod", pod, "--poll", "0.05",
                     "--master-port", str(port), "--", sys.executable, child, out],
                    env=env, stdout=logf, stderr=subprocess.STDOUT)))
                logf.close()
            lw = dict(launchers=launchers)
            wait_until("the first launch", lambda: all(len(calls(out, r)) == 1 for r in (0, 1)), **lw)
            first = {r: calls(out, r)[0]["pid"] for r in (0, 1)}

            # (a) grow 2 -> 4: p1 starts ranks 2-3; ranks 0-1 continue in place
            gen, cid = change(4, launchers)
            publish(assignment(gen, cid, [("p0", [0, 1], [0, 1]), ("p1", [2, 3], [2, 3])]))
            wait_until("grow", lambda: all(len(calls(out, r)) == 2 for r in (0, 1))
                       and all(len(calls(out, r)) == 1 for r in (2, 3)), **lw)
            assert {r: calls(out, r)[1]["pid"] for r in (0, 1)} == first, "ranks 0-1 kept their processes"
            assert [calls(out, r)[1]["reconfigurations"] for r in (0, 1)] == [1, 1]
            check_loaded(out, (0, 1, 2, 3), gen, 4)
            assert "live reconfiguration 1: ranks [0, 1] continue in place under (T,P,D)=(1,1,4)" in log(out, "p0")
            assert "live reconfiguration 1: ranks [] continue in place under (T,P,D)=(1,1,4), generation %s, " \
                   "starting ranks [2, 3]" % gen in log(out, "p1"), log(out, "p1")
            grown = {r: calls(out, r)[-1]["pid"] for r in (2, 3)}

            # (b) shrink 4 -> 2: ranks 2-3 leave with exit status 0; ranks 0-1 continue in place
            gen, cid = change(2, launchers)
            publish(assignment(gen, cid, [("p0", [0, 1], [0, 1])]))
            wait_until("shrink", lambda: all(len(calls(out, r)) == 3 for r in (0, 1))
                       and "waiting: pod p1 has no ranks in the assignment for generation %s" % gen in log(out, "p1"),
                       **lw)
            assert {r: calls(out, r)[2]["pid"] for r in (0, 1)} == first, "ranks 0-1 kept their processes"
            check_loaded(out, (0, 1), gen, 2)
            p1 = log(out, "p1")
            for r in (2, 3):
                assert "live: rank %d left with exit status 0" % r in p1, p1
                assert "tenplex: rank %d leaves: the new world size is 2" % r in p1, p1
                assert not alive(grown[r])
            assert "live reconfiguration 2: ranks [0, 1] continue in place under (T,P,D)=(1,1,2)" in log(out, "p0")

            # (b2) a change that fails after the ranks saved: the adapter publishes the last assignment again
            # for the generation they saved, and ranks 0-1 continue in place from it
            gen, cid = failing_change(launchers)
            publish(assignment(gen, cid, [("p0", [0, 1], [0, 1])]))
            wait_until("the failed change", lambda: all(len(calls(out, r)) == 4 for r in (0, 1)), **lw)
            assert {r: calls(out, r)[3]["pid"] for r in (0, 1)} == first, "ranks 0-1 kept their processes"
            check_loaded(out, (0, 1), gen, 2)
            assert "live reconfiguration 3: ranks [0, 1] continue in place under (T,P,D)=(1,1,2)" in log(out, "p0")

            # (c) rank 1 moves from p0 to p1: every rank is relaunched, and both launchers say why
            gen, cid = change(3, launchers)
            publish(assignment(gen, cid, [("p0", [0], [0]), ("p1", [1, 2], [2, 3])]))
            wait_until("the move", lambda: len(calls(out, 0)) == 5 and len(calls(out, 1)) == 5
                       and len(calls(out, 2)) == 2, **lw)
            why = "rank 1 moves from pod p0 (local device 1) to pod p1 (local device 2)"
            for pod, ranks in (("p0", [0]), ("p1", [1, 2])):
                assert "live: %s; relaunching ranks %s of 3 under (T,P,D)=(1,1,3) from generation %s" % (
                    why, ranks, gen) in log(out, pod), log(out, pod)
            assert "tenplex: rank 0 relaunched by the launcher: " + why in log(out, "p0")
            moved = {r: calls(out, r)[-1]["pid"] for r in (0, 1, 2)}
            assert moved[0] != first[0] and moved[1] != first[1] and moved[2] != grown[2], moved
            assert all(calls(out, r)[-1]["reconfigurations"] == 0 for r in (0, 1, 2)), "fresh processes"
            check_loaded(out, (0, 1, 2), gen, 3)

            # (d) rank 1 exits with 3 after its save during the change to 2: every rank is relaunched from
            # the committed generation, nothing saved is lost
            open(os.path.join(out, "die-1"), "w").close()
            gen, cid = change(2, launchers)
            publish(assignment(gen, cid, [("p0", [0], [0]), ("p1", [1], [2])]))
            wait_until("the relaunch", lambda: len(calls(out, 0)) == 6 and len(calls(out, 1)) == 6, **lw)
            why = "rank 1 (pod p1) exited with 3 during live reconfiguration 5"  # the job's 5th change
            assert "rank 1: exiting with 3 after its save (injected)" in log(out, "p1")
            for pod, ranks in (("p0", [0]), ("p1", [1])):
                assert "live: %s; relaunching ranks %s of 2 under (T,P,D)=(1,1,2) from generation %s" % (
                    why, ranks, gen) in log(out, pod), log(out, pod)
            assert calls(out, 0)[-1]["pid"] != moved[0] and calls(out, 1)[-1]["pid"] != moved[1]
            check_loaded(out, (0, 1), gen, 2)
            assert not os.path.exists(os.path.join(out, "die-1"))
            assert not alive(moved[2]), "rank 2 exited on the relaunch"

            # (e) grow 2 -> 3 while the added rank 2 fails before the new group forms: the kept ranks cannot
            # form it, so every pod ends its ranks and starts them again under the same assignment
            kept = {r: calls(out, r)[-1]["pid"] for r in (0, 1)}
            open(os.path.join(out, "die-start-2"), "w").close()
            gen, cid = change(3, launchers)
            publish(assignment(gen, cid, [("p0", [0], [0]), ("p1", [1, 2], [2, 3])]))
            wait_until("the relaunch after a failed regroup", lambda: len(calls(out, 0)) == 7
                       and len(calls(out, 1)) == 7 and len(calls(out, 2)) == 3, **lw)
            why = "rank 2 (pod p1) exited with 4 before the process group tenplex/live/6/group formed"
            assert "live reconfiguration 6: ranks [1] continue in place under (T,P,D)=(1,1,3), generation %s, " \
                   "starting ranks [2]" % gen in log(out, "p1"), log(out, "p1")
            for pod, ranks in (("p0", [0]), ("p1", [1, 2])):
                assert "live: %s; relaunching ranks %s of 3 under (T,P,D)=(1,1,3) from generation %s" % (
                    why, ranks, gen) in log(out, pod), log(out, pod)
            assert all(calls(out, r)[-1]["pid"] != kept[r] for r in (0, 1))
            check_loaded(out, (0, 1, 2), gen, 3)

            # (f) a hostile process sets the role the ranks wait for next (an unsigned relaunch) before the change,
            # and the new assignment's decision and abort before the assignment is published
            hostile(port, ("set", "tenplex/live/7", json.dumps({"relaunch": "forged"})))
            gen, cid = change(2, launchers)
            tag = pod_roles.tag({"generation": gen, "change": cid})
            hostile(port, ("set", "tenplex/pods/" + tag, json.dumps({"how": "launch", "prefix": "evil", "next": 1})),
                    ("set", "tenplex/pods/%s/abort/why" % tag, "forged abort"), ("add", "tenplex/pods/%s/abort" % tag, 1))
            publish(assignment(gen, cid, [("p0", [0], [0]), ("p1", [1], [2])]))
            wait_until("the relaunch after a forged role", lambda: len(calls(out, 0)) == 8 and len(calls(out, 1)) == 8,
                       **lw)
            for pod in ("p0", "p1"):
                text = log(out, pod)
                assert "refused the value of tenplex/live/7 in the rendezvous store: it came without a MAC" in text, text
                assert "relaunched by the launcher: forged" not in text and "forged abort" not in text, text
                assert "during live reconfiguration 7; relaunching ranks %s of 2 under (T,P,D)=(1,1,2) from " \
                       "generation %s" % ([0] if pod == "p0" else [1], gen) in text, text
            # the forged decision is either read and ignored or replaced by the host's before p1 reads it (timing):
            # never acted on either way (no launch under its prefix)
            assert all("evil" not in log(out, pod) for pod in ("p0", "p1")), [log(out, pod) for pod in ("p0", "p1")]
            assert all(calls(out, r)[-1]["reconfigurations"] == 0 for r in (0, 1)), "fresh processes"
            check_loaded(out, (0, 1), gen, 2)

            # the job ends: both launchers exit 0
            open(os.path.join(out, "END"), "w").close()
            for pod, p in launchers:
                assert p.wait(timeout=120) == 0, (pod, log(out, pod))
                assert log(out, pod).rstrip().endswith("tenplex.launch: the job ended"), log(out, pod)
            # every launch saw a step it could save: none of the processes ended with an error but the injected
            # ones and the ranks that refused the forged role
            for pod in ("p0", "p1"):
                assert log(out, pod).count("Traceback") == log(out, pod).count("refused the value"), log(out, pod)
        except BaseException:
            for pod, _ in launchers:  # what the launchers and their ranks said, for the failure's report
                print("--- launcher %s ---\n%s" % (pod, log(out, pod)), file=sys.stderr)
            raise
        finally:
            for _, p in launchers:
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
                    p.wait()
            for r in range(4):
                for rec in calls(out, r):
                    if alive(rec["pid"]):
                        os.kill(rec["pid"], signal.SIGKILL)


def test_decisions():
    """The pure part: who hosts, and why ranks cannot continue in place."""
    a = assignment(5, "c1", [("p0", [0, 1], [0, 1]), ("p1", [2, 3], [2, 3])])
    b = assignment(9, "c2", [("p0", [0, 1], [0, 1])])
    assert pod_roles.host_pod(a) == "p0" and pod_roles.tag(a) == "g5-cc1"
    assert pod_roles.cannot_continue(a, b) is None and pod_roles.cannot_continue(b, a) is None
    moved = assignment(9, "c2", [("p1", [0], [0]), ("p0", [1], [1])])
    assert pod_roles.cannot_continue(a, moved).startswith("rank 0 moves from pod p0 (127.0.0.1) to pod p1"), \
        pod_roles.cannot_continue(a, moved)
    other_device = assignment(9, "c2", [("p0", [0, 1], [0, 2])])
    assert pod_roles.cannot_continue(b, other_device) == \
        "rank 1 moves from pod p0 (local device 1) to pod p0 (local device 2)"
    new_addr = dict(b, masterAddr="10.0.0.9")
    assert "and the rendezvous store with it" in pod_roles.cannot_continue(b, new_addr)
    assert json.loads(pod_roles.decision("live", "tenplex/live/3/group", 4, "g1-cNone"))["epoch"] == "g1-cNone"
    role = json.loads(pod_roles.role(a, 3, "tenplex/live/3/group"))
    assert role == {"world": 4, "config": a["config"], "prefix": "tenplex/live/3/group", "segment": 3}, role


if __name__ == "__main__":
    test_decisions()
    test_live_pod_launchers()
    print("OK")
