"""torchrun's ``tenplex`` rendezvous backend (torch 2.x) against a real daemon (TENPLEX_ADDR).

Real torchrun agents (``python3 -m torch.distributed.run``), two processes per node, find the backend
through the ``torchrun.handlers`` entry point of a ``tenplex`` distribution (a dist-info directory on
``PYTHONPATH``, as an installed client has it); the daemon decides every round.

- An unmodified script (no tenplex call) on two nodes (``--nnodes 2:2``) forms one group of four.
- An elastic script (``tests/python/torchrun_train.py``: load, ``should_stop``, save) grows from one
  node to two when a second torchrun starts, shrinks to one when the daemon is told the job has one node
  (the other waits on standby), grows back, shrinks again, and ends with the standby node exiting 0.
  Steps run exactly once and in order across the five rounds, every round's ranks start at the same
  step, and the final weights equal one process's run of as many steps.
- A node lost with its workers (its process group SIGKILLed): the other node's workers fail, its agent
  restarts them, the lost node is dropped once not heard from, and the round of the survivor first moves
  the last complete generation to its world; the weights still equal the one-process run.
- Hostile requests to the rendezvous routes are refused with 4xx and change nothing; a node's calls need
  the secret its first join answered; removing the job removes its rendezvous.

Prints OK at the end; any failure raises."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, PKG)

import tenplex  # noqa: E402
from tenplex.errors import TenplexError  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
HOSTPORT = ADDR.split("://")[-1]
TRAIN = os.path.join(HERE, "torchrun_train.py")
c = tenplex.Client(ADDR)


def entry_point(tmp):
    """A dist-info of the tenplex distribution with its torchrun entry point, as pip installs it."""
    d = os.path.join(tmp, "ep", "tenplex-0.1.0.dist-info")
    os.makedirs(d)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: tenplex\nVersion: 0.1.0\n")
    with open(os.path.join(PKG, "pyproject.toml")) as f:
        line = next(x for x in f if x.startswith("tenplex = \"tenplex.launchers.torchrun_rendezvous"))
    with open(os.path.join(d, "entry_points.txt"), "w") as f:
        f.write("[torchrun.handlers]\n" + line.replace('"', ""))
    return os.path.dirname(d)


def torchrun(tmp, name, job, nnodes, *args, conf="last_call_timeout=1"):
    log = open(os.path.join(tmp, name + ".log"), "w")
    env = dict(os.environ, PYTHONPATH=PKG + os.pathsep + os.path.join(tmp, "ep"))
    env.pop("TENPLEX_JOB", None)
    p = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes", nnodes, "--nproc-per-node", "2",
                          "--max-restarts", "3", "--monitor-interval", "0.1", "--rdzv-backend", "tenplex",
                          "--rdzv-endpoint", HOSTPORT, "--rdzv-id", job, "--rdzv-conf", conf, TRAIN] + list(args),
                         stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    p.log = log.name
    return p


def wait_until(what, cond, timeout=120, procs=()):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        for p in procs:
            assert p.poll() is None, "%s ended (%s) while waiting for %s:\n%s" % (p.log, p.returncode, what, tail(p))
        assert time.time() < deadline, "timed out waiting for " + what + "\n" + "\n".join(tail(p) for p in procs)
        time.sleep(0.05)


def tail(p):
    with open(p.log) as f:
        return "---- %s\n%s" % (p.log, "".join(f.readlines()[-25:]))


def steps(out):
    try:
        with open(os.path.join(out, "steps.jsonl")) as f:
            return [json.loads(x) for x in f if x.endswith("\n")]
    except FileNotFoundError:
        return []


def at_world(out, world, beyond, after=3):
    """Lines of a round of ``world`` ranks after round ``beyond``, once every rank did ``after`` steps in it."""
    lines = [x for x in steps(out) if x["world"] == world and x["round"] > beyond]
    if not lines:
        return None
    r = max(x["round"] for x in lines)
    mine = [x for x in lines if x["round"] == r]
    return r if all(sum(1 for x in mine if x["rank"] == k) >= after for k in range(world)) else None


def rendezvous(job, node=None):
    return c.request("GET", "/api/v1/jobs/%s/rendezvous" % job, params={} if node is None else {"node": node}).json()


def target(job, nodes):
    return c.request("POST", "/api/v1/jobs/%s/rendezvous/target" % job, json={"nodes": nodes}).json()


def check_run(out, rounds):
    """Steps ran once each and in order, every round's ranks started together at the step after the last
    one of the round before, and the final weights equal one process's."""
    lines = steps(out)
    by_round = {}
    for x in lines:
        by_round.setdefault(x["round"], []).append(x)
    assert sorted(by_round) == list(range(1, rounds + 1)), sorted(by_round)
    first = 1
    for r in sorted(by_round):
        world = by_round[r][0]["world"]
        assert all(x["world"] == world and x["tp_pp_dp"] == ["1", "1", str(world)] for x in by_round[r]), r
        for k in range(world):
            mine = [x["step"] for x in by_round[r] if x["rank"] == k]
            assert mine == list(range(first, first + len(mine))), (r, k, mine[:5], first)
        first = max(x["step"] for x in by_round[r]) + 1
    with open(os.path.join(out, "final.json")) as f:
        final = json.load(f)
    assert final["step"] == first - 1, (final["step"], first)
    worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(final["w"], final["reference"]))
    assert worst < 1e-12, (worst, final)
    return final["step"]


def plain(tmp):
    out = os.path.join(tmp, "plain")
    os.makedirs(out)
    job = "tr-plain-%d" % os.getpid()
    a = torchrun(tmp, "plain-a", job, "2:2", "--out", out, "--plain")
    b = torchrun(tmp, "plain-b", job, "2:2", "--out", out, "--plain")
    assert a.wait(timeout=180) == 0 and b.wait(timeout=60) == 0, tail(a) + tail(b)
    seen = []
    for r in range(4):
        with open(os.path.join(out, "plain-%d.json" % r)) as f:
            seen.append(json.load(f))
    assert [(s["rank"], s["world"], s["env_world"], s["sum"], s["job"]) for s in seen] == [
        (r, 4, 4, 6.0, job) for r in range(4)], seen
    st = rendezvous(job)
    assert st["state"] == "closed" and st["round"] == 1 and st["world"] == 4, st


def elastic(tmp):
    out = os.path.join(tmp, "elastic")
    os.makedirs(out)
    job = "tr-elastic-%d" % os.getpid()
    a = torchrun(tmp, "elastic-a", job, "1:3", "--out", out)
    r1 = wait_until("round 1 at world 2", lambda: at_world(out, 2, 0), procs=[a])
    b = torchrun(tmp, "elastic-b", job, "1:3", "--out", out)
    r2 = wait_until("a second node: world 4", lambda: at_world(out, 4, r1), procs=[a, b])
    target(job, 1)
    r3 = wait_until("one node again: world 2", lambda: at_world(out, 2, r2), procs=[a, b])
    st = wait_until("the second node on standby", lambda: [n for n in [rendezvous(job)] if n["world"] == 2])[0]
    assert len(st["members"]) == 1 and st["target"] == 1, st
    target(job, 2)
    r4 = wait_until("two nodes again: world 4", lambda: at_world(out, 4, r3), procs=[a, b])
    target(job, 1)
    wait_until("one node: world 2", lambda: at_world(out, 2, r4), procs=[a, b])
    open(os.path.join(out, "finish"), "w").close()
    assert a.wait(timeout=120) == 0, tail(a)
    assert b.wait(timeout=60) == 0, tail(b)  # on standby when the job ended
    with open(b.log) as f:
        assert "standby" in f.read(), tail(b)
    check_run(out, 5)
    changes = c.request("GET", "/api/v1/jobs/%s/resources" % job).json()["changes"]
    assert [x["state"] for x in changes] == ["done"] * 4, changes
    assert rendezvous(job)["state"] == "closed"


def lost_node(tmp):
    out = os.path.join(tmp, "lost")
    os.makedirs(out)
    job = "tr-lost-%d" % os.getpid()
    conf = "last_call_timeout=1,keep_alive=8"  # a node unheard of for 8 s is lost: long beside a loaded machine's stalls
    a = torchrun(tmp, "lost-a", job, "1:2", "--out", out, "--save-every", "4", conf=conf)
    r1 = wait_until("round 1", lambda: at_world(out, 2, 0), procs=[a])
    b = torchrun(tmp, "lost-b", job, "1:2", "--out", out, "--save-every", "4", conf=conf)
    r2 = wait_until("world 4", lambda: at_world(out, 4, r1, after=9), procs=[a, b])
    os.killpg(b.pid, signal.SIGKILL)  # the node and its workers
    b.wait(timeout=30)
    wait_until("the survivor alone", lambda: at_world(out, 2, r2), timeout=180, procs=[a])
    st = rendezvous(job)
    assert any("not heard from" in e for e in st["events"]), st
    assert any("moves the job's current generation" in e for e in st["events"]), st
    changes = c.request("GET", "/api/v1/jobs/%s/resources" % job).json()["changes"]
    assert changes[-1]["state"] == "done", changes
    open(os.path.join(out, "finish"), "w").close()
    assert a.wait(timeout=120) == 0, tail(a)
    with open(os.path.join(out, "final.json")) as f:
        final = json.load(f)
    worst = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(final["w"], final["reference"]))
    assert worst < 1e-12, final


def refused(status, f):
    try:
        f()
    except TenplexError as e:
        assert e.status == status, (status, e)
        return e.reason
    raise AssertionError("not refused (%d expected)" % status)


def hostile():
    job = "tr-hostile-%d" % os.getpid()
    route = "/api/v1/jobs/%s/rendezvous" % job

    def post(what, body, **kw):
        return c.request("POST", route + "/" + what, json=body, **kw).json()

    join = {"node": "n1", "nproc": 2, "minNodes": 1, "maxNodes": 2, "lastCallSeconds": 30}
    assert "no rendezvous" in refused(404, lambda: rendezvous(job))
    for bad in ({"node": "../x"}, {"nproc": 0}, {"nproc": 1 << 40}, {"minNodes": 3}, {"maxNodes": 0},
                {"daemon": "http://127.0.0.1:1"}, {"lastCallSeconds": "soon"}, {"lastCallSeconds": -1},
                {"keepAliveSeconds": 0}, {"keepAliveSeconds": 301}, {"node": 7}, {"nproc": 4096, "maxNodes": 1024}):
        refused(400, lambda: post("join", dict(join, **bad)))
    refused(400, lambda: c.request("POST", route + "/join", data=b"{not json", headers={"content-type": "application/json"}))
    refused(400, lambda: c.request("POST", route + "/join", json=[1, 2]))
    refused(404, lambda: rendezvous(job))  # nothing was kept
    st = post("join", join)
    assert st["state"] == "gathering" and st["asked"] == 1 and st["rank"] == -1, st
    secret = st["secret"]
    as_n1 = {"node": "n1", "secret": secret}
    assert len(secret) == 32 and "secret" not in rendezvous(job), st
    assert "secret" not in c.request("GET", route, params=as_n1).json()
    assert "the same on every node" in refused(409, lambda: post("join", dict(join, node="n2", maxNodes=3)))
    assert "--nproc-per-node" in refused(409, lambda: post("join", dict(join, node="n2", nproc=3)))
    assert "another agent's" in refused(409, lambda: post("join", join))  # n1 again, without its secret
    assert "another agent's" in refused(409, lambda: post("join", dict(join, secret="0" * 32)))
    st = post("join", dict(join, node="n2"))  # the second node completes the round at once
    assert st["round"] == 1 and st["rank"] == 1 and st["world"] == 4, st
    assert st["config"]["dp"] == 4 and st["config"]["devices"] == [[0, 0], [0, 1], [0, 2], [0, 3]], st
    mine = {"node": "n1", "secret": secret, "round": 1, "address": "127.0.0.1:9"}
    refused(409, lambda: post("store", dict(mine, secret=st["secret"], node="n2")))  # not node 0
    refused(409, lambda: post("store", dict(mine, round=2)))
    refused(409, lambda: post("store", dict(mine, secret=st["secret"])))  # n2's secret
    refused(409, lambda: post("store", {"node": "n1", "round": 1, "address": "127.0.0.1:9"}))  # none
    refused(409, lambda: c.request("GET", route, params={"node": "n1", "secret": "x"}))
    refused(400, lambda: post("store", dict(mine, address="a store")))
    for nodes in (0, 3, "2"):
        refused(400, lambda: post("target", {"nodes": nodes}))
    refused(404, lambda: post("leave", {}))
    refused(405, lambda: c.request("DELETE", route))
    assert "store" not in c.request("GET", route, params=as_n1).json()
    refused(409, lambda: rendezvous(job, "n1"))  # the node's status, without its secret
    post("store", mine)
    st = c.request("GET", route, params=as_n1).json()
    assert st["rank"] == 0 and st["store"] == "127.0.0.1:9" and st["target"] == 2, st
    brief = c.request("GET", route, params=dict(as_n1, brief="true")).json()
    assert brief["rank"] == 0 and brief["store"] == "127.0.0.1:9" and brief["waiting"] == 0, brief
    assert not {"members", "config", "events"} & set(brief), brief
    refused(400, lambda: c.request("GET", "/api/v1/jobs/%2E%2E/rendezvous"))
    refused(400, lambda: post("close", {}))
    refused(409, lambda: post("close", {"node": "n1"}))  # without its secret
    refused(409, lambda: post("close", {"node": "nobody"}))  # not a node of the run
    refused(409, lambda: post("close", {"node": "n1", "secret": secret + "0"}))
    strict = {"content-type": "application/json"}
    refused(400, lambda: c.request("POST", route + "/target", data=b'{"nodes": 2} {"nodes": 1}', headers=strict))
    refused(400, lambda: c.request("POST", route + "/target", data=b'{"nodes": 2, "nodes": 1}', headers=strict))
    refused(404, lambda: c.request("POST", route + "/nothing", data=b"not json", headers=strict))
    long = c.session.post(ADDR + route + "/join", json=dict(join, node="n9", daemon="h" * (5 << 20) + ":1"))
    assert long.status_code == 400 and len(long.content) < 1000, (long.status_code, len(long.content))
    for node in (".", ".."):
        refused(400, lambda: post("join", dict(join, node=node)))
    assert c.request("GET", route, params=as_n1).json()["target"] == 2  # nothing of that changed the run
    assert post("close", as_n1)["state"] == "closed"
    refused(409, lambda: post("target", {"nodes": 1}))  # a closed run takes nothing
    refused(409, lambda: post("store", mine))
    assert "closed" in refused(409, lambda: post("join", dict(join, secret=secret)))  # a node of the ended run
    assert "gone" in refused(409, lambda: post("join", dict(join, node="n3", secret=secret)))  # the old run's
    st = post("join", dict(join, node="n3", lastCallSeconds=0))  # a new node: the job runs again
    assert st["round"] == 1 and st["members"] == [{"node": "n3", "nproc": 2, "daemon": HOSTPORT}], st
    # a resource change posted around the rendezvous would stop ranks that no next round restarts
    assert "rendezvous/target" in refused(409, lambda: c.request(
        "POST", "/api/v1/jobs/%s/resources" % job, json={"size": 2, "devicesPerWorker": 2}))
    assert c.request("GET", "/api/v1/jobs/%s/stop" % job).json()["raised"] is False
    c.request("DELETE", "/api/v1/jobs/%s" % job)  # tenplex rm: the rendezvous goes with the job
    assert "no rendezvous" in refused(404, lambda: rendezvous(job))


def main():
    tmp = tempfile.mkdtemp(prefix="tenplex-torchrun-")
    try:
        entry_point(tmp)
        hostile()
        plain(tmp)
        elastic(tmp)
        lost_node(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("OK")


if __name__ == "__main__":
    main()
