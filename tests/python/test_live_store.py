"""The live rendezvous store against a hostile process: where the store helper listens, and what a waiting
rank does with a role it cannot verify.

A real store helper (``tenplex.launchers.store_host``), real waiting ranks (``tenplex.elastic`` with torch
gloo, as in test_live.py) and a hostile process that connects to the store's port as any client can and
sets the key a rank waits on: a forged ``relaunch``, a forged role signed with another secret, and a role
the launcher really signed for reconfiguration 1 replayed into reconfiguration 2. Each rank must refuse
(exit non-zero with a clear ``TenplexError``), never exit 0 or train under the forged role; a role signed
with the run's secret still works. The store must listen only on loopback where the installed torch can
bind one address, and otherwise say truthfully that it listens on every interface (and refuse to serve when
``TENPLEX_STORE_REQUIRE_LOOPBACK=1``). No daemon is needed; prints OK."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_live  # noqa: E402  (its rank script and store helper start)

import torch.distributed as dist  # noqa: E402

SECRET, JOB, signed = test_live.SECRET, test_live.JOB, test_live.signed

HOSTILE = r'''
import datetime, sys
import torch.distributed as dist
s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), None, False, datetime.timedelta(seconds=30))
s.set(sys.argv[2], sys.argv[3])
print("hostile: set " + sys.argv[2], flush=True)
'''


def hostile_set(port, key, value):
    out = subprocess.run([sys.executable, "-c", HOSTILE, str(port), key, value], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "hostile: set" in out.stdout, out


def rank(port, nxt, secret=SECRET, prefix=None):
    """One live rank (world 1) that trains once, stops, and waits for reconfiguration ``nxt``'s role."""
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", TENPLEX_TP="1", TENPLEX_PP="1", TENPLEX_DP="1",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), TENPLEX_LIVE="1", TENPLEX_JOB=JOB,
               TENPLEX_LIVE_PREFIX=prefix or "tenplex/test/%d" % nxt, TENPLEX_LIVE_NEXT=str(nxt),
               TENPLEX_LIVE_TIMEOUT="120")
    env.pop("TENPLEX_LIVE_SECRET", None)
    if secret is not None:
        env["TENPLEX_LIVE_SECRET"] = secret
    return subprocess.Popen([sys.executable, "-c", test_live.CHILD], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def await_waiting(client, p, n):
    deadline = time.time() + 120
    while client.add("tenplex/live/%d/waiting" % n, 0) < 1:  # the rank saved and waits for its role
        assert time.time() < deadline and p.poll() is None, "the rank did not wait: %s" % (p.poll(),)
        time.sleep(0.02)


def assert_refused(p, what):
    out = p.communicate(timeout=120)[0]
    assert p.returncode not in (0, None), "%s: the rank exited %s\n%s" % (what, p.returncode, out)
    assert "TenplexError" in out and "refused" in out, "%s: no clear refusal\n%s" % (what, out)
    assert "relaunched by the launcher" not in out and "leaves" not in out, out
    calls = [line for line in out.splitlines() if line.startswith("call ")]
    assert len(calls) == 1, "%s: the rank trained under the forged role: %s" % (what, calls)
    return out


def test_forged_and_replayed_roles_are_refused():
    host, port = test_live.start_store()
    try:
        client = dist.TCPStore("127.0.0.1", port, None, False, __import__("datetime").timedelta(seconds=30))
        one = {"world": 1, "config": {"tp": 1, "pp": 1, "dp": 1, "devices": [[0, 0]]},
               "prefix": "tenplex/live/1/group", "segment": 1}
        # a forged relaunch, without any MAC: the rank would exit 0 and be relaunched by no one
        p = rank(port, 1)
        await_waiting(client, p, 1)
        hostile_set(port, "tenplex/live/1", json.dumps({"relaunch": "forged"}))
        out = assert_refused(p, "unsigned relaunch")
        assert "without a MAC" in out, out
        # a forged role, signed with a secret that is not the run's
        p = rank(port, 2)
        await_waiting(client, p, 2)
        hostile_set(port, "tenplex/live/2", signed("00" * 32, 2, dict(one, prefix="tenplex/live/2/group")))
        out = assert_refused(p, "role signed with another secret")
        assert "does not verify" in out, out
        # a genuine role of reconfiguration 1, replayed into reconfiguration 3
        p = rank(port, 3)
        await_waiting(client, p, 3)
        hostile_set(port, "tenplex/live/3", signed(SECRET, 1, one))
        out = assert_refused(p, "replayed role")
        assert "does not verify" in out, out
        # the genuine role for reconfiguration 4: the rank forms its group in place and trains again
        p = rank(port, 4)
        await_waiting(client, p, 4)
        host.stdin.write("set tenplex/live/4 %s\n" % signed(SECRET, 4, dict(one, prefix="tenplex/live/4/group")))
        host.stdin.flush()
        assert host.stdout.readline().strip() == "ok"
        out = p.communicate(timeout=120)[0]
        assert p.returncode == 0, out
        calls = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("call ")]
        assert [c[:7] for c in calls] == [[0, 1, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1, 1]], calls
        # a rank started without a secret (an older launcher) takes an unsigned role, with a warning
        p = rank(port, 5, secret=None)
        await_waiting(client, p, 5)
        hostile_set(port, "tenplex/live/5", json.dumps({"relaunch": "an older launcher"}))
        out = p.communicate(timeout=120)[0]
        assert p.returncode == 0 and "TENPLEX_LIVE_SECRET" in out and "relaunched by the launcher" in out, out
    finally:
        host.stdin.close()
        host.wait(timeout=30)


def listeners(port):
    """The local addresses (hex, as /proc/net/tcp{,6} write them) of the sockets listening on ``port``."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        with open(name) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                addr, hexport = fields[1].rsplit(":", 1)
                if fields[3] == "0A" and int(hexport, 16) == port:
                    found.append(addr)
    return found


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}


def bindable():
    """Whether the installed torch's TCPStore takes a listening socket of ours (``master_listen_fd``)."""
    return "master_listen_fd" in (dist.TCPStore.__init__.__doc__ or "")


def test_store_listens_on_loopback_or_says_so():
    host, port = test_live.start_store()
    try:
        where = host.listen
        found = listeners(port)
        assert found, "nothing listens on port %d" % port
        if bindable():
            assert where == "127.0.0.1" and set(found) <= LOOPBACK, (where, found)
        else:  # torch 1.13: its server binds the wildcard address whatever host it is given; the helper says so
            assert where == "*" and not set(found) <= LOOPBACK, (where, found)
    finally:
        host.stdin.close()
        host.wait(timeout=30)
    if not bindable():  # and refuses to serve when the operator asks for loopback only
        p = subprocess.Popen([sys.executable, "-m", "tenplex.launchers.store_host"], cwd=test_live.PKG,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, TENPLEX_STORE_REQUIRE_LOOPBACK="1"))
        out, err = p.communicate(timeout=120)
        assert p.returncode == 2 and out == "" and "cannot listen on 127.0.0.1 only" in err, (p.returncode, out, err)


if __name__ == "__main__":
    test_store_listens_on_loopback_or_says_so()
    test_forged_and_replayed_roles_are_refused()
    print("OK")
