"""tenplex.live and tenplex.launchers.store_host without a daemon: the store helper's line protocol, the rank's
configuration, and the live handover with real processes (two ranks stop, the launcher's part is
played here: rank 1 is told to leave and exits 0, rank 0 forms a group of one in place and trains
again in the same process; then two ranks change configuration within the same world and keep their
default group); relaunch mode calls the training function once. Prints OK; any failure
raises."""

import datetime
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "..", "..", "clients", "python")
sys.path.insert(0, PKG)

import torch.distributed as dist  # noqa: E402

from tenplex import live  # noqa: E402
from tenplex.launchers import store_host

CHILD = r'''
import json, os, sys
sys.path.insert(0, %(pkg)r)
import torch, torch.distributed as dist
import tenplex
from tenplex import downtime, stop
calls = []

def groups():
    """(the default group's id, how many groups the process holds)."""
    c10d = dist.distributed_c10d
    table = c10d._world.pg_map if hasattr(c10d, "_world") else c10d._pg_map
    return id(c10d._get_default_group()), len(table)

def train(cfg):
    held = groups()
    t = torch.ones(1)
    dist.all_reduce(t)  # the group works and has cfg.world ranks
    if cfg.world > 1:  # a group of the training function's own, for the configuration it runs under
        dist.all_reduce(t, group=dist.new_group(list(range(cfg.world))))
    calls.append([cfg.rank, cfg.world, cfg.tp, cfg.pp, cfg.dp, int(t[0]), cfg.reconfigurations, os.getpid(),
                  held[0], held[1]])
    print("call " + json.dumps(calls[-1]), flush=True)
    if len(calls) == 1:
        stop._stop_seen = True  # as tenplex.should_stop saying stop (the rank would save here)
    return len(calls)

r = tenplex.elastic(train)
print("returned %%d marks %%s" %% (r, [p for p, _ in downtime.marks()]), flush=True)
''' % {"pkg": PKG}


SECRET = "5e" * 32  # the run's secret, as a launcher hands it to its ranks (TENPLEX_LIVE_SECRET)
JOB = "live-test"


def signed(secret, n, role, change="r1-test", job=JOB):
    """The value a launcher sets at ``tenplex/live/<n>``, written here independently of the client (docs/LIVE.md)."""
    text = json.dumps(role)
    msg = b"\0".join([b"tenplex-live-role", job.encode(), str(n).encode(), change.encode(), text.encode()])
    mac = hmac.new(secret.encode("ascii"), msg, hashlib.sha256).hexdigest()
    return json.dumps({"change": change, "role": text, "mac": mac})


class FakeStore:
    def __init__(self):
        self.kv = {}

    def set(self, k, v):
        self.kv[k] = v

    def add(self, k, n):
        self.kv[k] = int(self.kv.get(k, 0)) + n
        return self.kv[k]


def test_serve_protocol():
    s, out = FakeStore(), []
    store_host.serve(s, ["set a/b {\"x\": 1} y\n", "count c\n", "bogus\n", "set\n"], out.append)
    assert out[0] == "ok" and s.kv["a/b"] == "{\"x\": 1} y", (out, s.kv)
    assert out[1] == "0"
    assert out[2].startswith("error unknown request 'bogus'") and out[3].startswith("error"), out


def test_config():
    c = live.Config(3, 4, 2, 2, 1)
    assert (c.tp_rank, c.dp_rank, c.pp_rank) == (1, 0, 1), vars(c)
    c = live.Config(5, 8, 2, 2, 2)
    assert (c.tp_rank, c.dp_rank, c.pp_rank) == (1, 0, 1), vars(c)
    for bad, words in (((0, 4, 2, 2, 2), "2*2*2 is not the world size 4"), ((4, 4, 1, 1, 4), "rank 4 is not in")):
        try:
            live.Config(*bad)
            raise AssertionError("accepted %s" % (bad,))
        except ValueError as e:
            assert words in str(e), e
    env = {"RANK": "1", "WORLD_SIZE": "2", "TENPLEX_TP": "2", "TENPLEX_LIVE": "1",
           "TENPLEX_CONFIG": json.dumps({"tp": 2, "pp": 1, "dp": 1})}
    c = live.Config.from_env(env)
    assert (c.rank, c.world, c.tp, c.dp, c.live, c.placement["tp"]) == (1, 2, 2, 1, True, 2), vars(c)


def test_rebuild_marked_once_after_a_regroup():
    from tenplex import downtime
    downtime.clear()
    downtime.before_load()  # no regroup: a load is not a rebuild's end
    downtime._auto["rebuild_pending"] = True  # what a regroup in place leaves
    downtime.before_load()
    downtime.before_load()
    assert [p for p, _ in downtime.marks()] == ["rebuild"], downtime.marks()
    downtime.clear()


def start_store():
    p = subprocess.Popen([sys.executable, "-m", "tenplex.launchers.store_host"], cwd=PKG, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    assert first.startswith("port "), first
    words = first.split()  # port N listen ADDR
    p.listen = words[3] if len(words) >= 4 and words[2] == "listen" else None
    return p, int(words[1])


def ranks(port, world, live_mode, prefix="tenplex/launch/1", nxt=1):
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), TENPLEX_TP="1", TENPLEX_PP="1",
                   TENPLEX_DP=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="1")
        if live_mode:
            env.update(TENPLEX_LIVE="1", TENPLEX_JOB=JOB, TENPLEX_LIVE_SECRET=SECRET, TENPLEX_LIVE_PREFIX=prefix,
                       TENPLEX_LIVE_NEXT=str(nxt))
        procs.append(subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True))
    return procs


def test_store_host_process_and_live_handover():
    host, port = start_store()
    try:
        host.stdin.write("set probe 1\ncount tenplex/live/1/waiting\n")
        host.stdin.flush()
        assert host.stdout.readline().strip() == "ok"
        assert host.stdout.readline().strip() == "0"
        client = dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=30))
        procs = ranks(port, 2, True)
        deadline = time.time() + 60
        while client.add("tenplex/live/1/waiting", 0) < 2:  # both ranks stopped and wait for their role
            assert time.time() < deadline and all(p.poll() is None for p in procs), "the ranks did not wait"
            time.sleep(0.02)
        role = {"world": 1, "config": {"tp": 1, "pp": 1, "dp": 1, "devices": [[0, 0]]},
                "prefix": "tenplex/live/1/group", "segment": 1}
        host.stdin.write("set tenplex/live/1 %s\n" % signed(SECRET, 1, role))
        host.stdin.flush()
        assert host.stdout.readline().strip() == "ok"
        outs = [p.communicate(timeout=60)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert "tenplex: rank 1 leaves: the new world size is 1" in outs[1] and "returned" not in outs[1], outs[1]
        calls = [json.loads(line[5:]) for line in outs[0].splitlines() if line.startswith("call ")]
        assert [c[:7] for c in calls] == [[0, 2, 1, 1, 2, 4, 0], [0, 1, 1, 1, 1, 1, 1]], calls
        assert calls[0][7] == calls[1][7], "rank 0 kept its process"
        assert "returned 2 marks ['commit', 'regroup']" in outs[0], outs[0]
        assert client.add("tenplex/live/1/group/regrouped", 0) == 1
        # the same world again (2 ranks, (1,1,2) -> (2,1,1)): both keep their processes and the default group
        # (no rendezvous), the training function's group of the old configuration is ended
        procs = ranks(port, 2, True, prefix="tenplex/launch/2", nxt=2)
        deadline = time.time() + 60
        while client.add("tenplex/live/2/waiting", 0) < 2:
            assert time.time() < deadline and all(p.poll() is None for p in procs), "the ranks did not wait"
            time.sleep(0.02)
        role = {"world": 2, "config": {"tp": 2, "pp": 1, "dp": 1, "devices": [[0, 0], [0, 1]]},
                "prefix": "tenplex/live/2/group", "segment": 1}
        host.stdin.write("set tenplex/live/2 %s\n" % signed(SECRET, 2, role))
        host.stdin.flush()
        assert host.stdout.readline().strip() == "ok"
        outs = [p.communicate(timeout=60)[0] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        for r, out in enumerate(outs):
            calls = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("call ")]
            assert [c[:7] for c in calls] == [[r, 2, 1, 1, 2, 4, 0], [r, 2, 2, 1, 1, 4, 1]], calls
            assert calls[0][7] == calls[1][7], "the rank kept its process"
            assert calls[0][8] == calls[1][8], "the default group was kept"
            assert calls[0][9] == calls[1][9] == 1, "only the default group is held at each call's start"
            assert "returned 2 marks ['commit', 'regroup']" in out, out
        assert client.add("tenplex/live/2/group/regrouped", 0) == 2
        # relaunch mode: train once, whatever should_stop said
        procs = ranks(port, 1, False)
        out = procs[0].communicate(timeout=60)[0]
        assert procs[0].returncode == 0 and out.count("call ") == 1 and "returned 1" in out, out
    finally:
        host.stdin.close()
        assert host.wait(timeout=10) == 0, "the store helper ends at the end of its input"


WATCHED = """
import os, sys, time
sys.path.insert(0, %r)
from tenplex import rank_env
print("watching" if rank_env.watch_launcher(interval=0.05) else "not watching", flush=True)
print("watching twice" if rank_env.watch_launcher(interval=0.05) else "once per process", flush=True)
time.sleep(120)
"""

LAUNCHER = """
import os, subprocess, sys
env = dict(os.environ, TENPLEX_LAUNCHER_PID=str(os.getpid()), RANK="1", TENPLEX_JOB="w")
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print(child.pid, flush=True)
sys.stdout.write(child.stdout.readline().decode() + child.stdout.readline().decode())
sys.stdout.flush()
child.wait()
"""


def _running(pid):
    """Whether ``pid`` runs (not gone, not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _await_gone(pid, seconds):
    deadline = time.time() + seconds
    while _running(pid) and time.time() < deadline:
        time.sleep(0.05)  # polling a process that is not our child (no wait() for it)
    return not _running(pid)


def test_rank_exits_when_its_launcher_is_gone():
    """A rank started with TENPLEX_LAUNCHER_PID is ended once its launcher is SIGKILLed (its watcher says so
    and exits too); once per process; without the variable nothing is watched; a launcher id that now names
    a process started at another time (the id reused) counts as gone; a watcher exits with its rank."""
    import signal

    from tenplex import rank_env

    code = WATCHED % os.path.join(HERE, "..", "..", "clients", "python")
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, code], stdout=subprocess.PIPE, text=True)
    child = int(launcher.stdout.readline())
    assert launcher.stdout.readline().strip() == "watching"
    assert launcher.stdout.readline().strip() == "once per process"
    watchers = [int(p) for p in open("/proc/%d/task/%d/children" % (child, child)).read().split()]
    assert len(watchers) == 1, watchers
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    assert _await_gone(child, 20), "the rank outlived its launcher by 20 s"
    assert _await_gone(watchers[0], 10), "the watcher outlived its rank"

    assert rank_env.watch_launcher(env={}) is None, "nothing to watch without TENPLEX_LAUNCHER_PID"
    # the watcher itself, for a rank (here a sleeping process) whose launcher id names another process
    rank = subprocess.Popen(["sleep", "60"])
    me = rank_env._started(os.getpid())
    argv = [sys.executable, "-S", "-c", rank_env._WATCHER, str(os.getpid()), "another start", str(rank.pid),
            rank_env._started(rank.pid), "0.01", "rank 9 of job w"]
    watcher = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert rank.wait(timeout=10) == -signal.SIGTERM, "a launcher id reused by another process: the rank is ended"
    assert "rank 9 of job w: the launcher (pid %d) is gone; ending it" % os.getpid() in watcher.stderr, watcher.stderr
    # and one whose launcher runs: it exits when the rank does, the rank untouched
    rank = subprocess.Popen(["sleep", "0.3"])
    argv[4:7] = [me, str(rank.pid), rank_env._started(rank.pid)]
    watcher = subprocess.Popen(argv)
    assert rank.wait(timeout=10) == 0
    assert watcher.wait(timeout=10) == 0, "the watcher exits with its rank"


if __name__ == "__main__":
    test_serve_protocol()
    test_config()
    test_rebuild_marked_once_after_a_regroup()
    test_store_host_process_and_live_handover()
    test_rank_exits_when_its_launcher_is_gone()
    print("OK")
