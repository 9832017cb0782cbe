"""Pre-started interpreters for the pod launcher's relaunch mode (``python3 -m tenplex.launch`` without
``--live``; issue 30 item 2, as ``tenplex run`` does).

While this pod's ranks train, the launcher watches the job's stop flag. Once it is raised (a resource
change is coming: the ranks will save and exit), it starts as many interpreters as the pod runs ranks
now, each running :mod:`tenplex.launchers.prestart`: it imports torch while the ranks save and the daemon moves the
state, then waits for one line. The next launch hands each rank's environment to one of them (``go
{env}``) instead of starting a fresh interpreter, starts the ranks it has none for as before, and tells
the spare ones to exit (``exit``). Only a command of the form ``python SCRIPT ARGS...`` can be
pre-started; any other is started after the assignment as before."""

import json
import os
import subprocess
import time

from . import prestart
from ..c10d import tcp_store
from ..rank_env import with_memory_tunables


def applies(command):
    """Whether ``command`` is ``python SCRIPT ARGS...`` (no interpreter options before the script)."""
    return (os.path.basename(command[0]).startswith("python") and len(command) >= 2
            and not command[1].startswith("-") and os.path.isfile(command[1]))


class Prestarted:
    """The interpreters started ahead of the next launch, oldest first."""

    def __init__(self, command, log, enabled=True):
        self.command, self.log = command, log
        self.enabled = enabled and applies(command)
        self.waiting = []  # [(process, its start time)]

    def start(self, n):
        """Starts ``n`` interpreters, unless some wait already (once per change)."""
        if not self.enabled or self.waiting or n <= 0:
            return
        with open(prestart.__file__, encoding="utf-8") as f:
            source = f.read()
        cmd = [self.command[0], "-c", source] + list(self.command[1:])
        for _ in range(n):
            at = time.time()
            try:
                self.waiting.append((subprocess.Popen(cmd, stdin=subprocess.PIPE, env=with_memory_tunables(os.environ)), at))
            except OSError as e:
                self.log("could not pre-start an interpreter (%s); the ranks left start after the commit" % e)
                break
        if self.waiting:
            self.log("pre-started %d interpreter(s) for the next launch (pids %s)" % (
                len(self.waiting), ", ".join(str(p.pid) for p, _ in self.waiting)))

    def take(self, env):
        """A waiting interpreter, told to run the script with ``env`` (now the rank's process), or None."""
        while self.waiting:
            p, at = self.waiting.pop(0)
            if p.poll() is not None:  # it ended while waiting (an import failed): the rank starts fresh
                continue
            go = dict(env, TENPLEX_SPAWN_TIME="%.6f" % at)  # tenplex.downtime: the interpreter's start
            try:
                p.stdin.write(("go " + json.dumps(go) + "\n").encode("utf-8"))
                p.stdin.close()
                return p
            except OSError:  # it ended just now
                continue
        return None

    def close(self):
        """Tells the interpreters not taken to exit, and waits for them."""
        spare, self.waiting = self.waiting, []
        for p, _ in spare:
            try:
                p.stdin.write(b"exit\n")
                p.stdin.close()
            except OSError:
                pass
        for p, _ in spare:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if spare:
            self.log("%d pre-started interpreter(s) not needed, told to exit" % len(spare))


class HostedStore:
    """The rendezvous store the launcher of rank 0's pod hosts at ``masterAddr:--master-port`` before
    any rank starts (as ``tenplex run`` does): every rank connects as a client
    (``TORCHELASTIC_USE_AGENT_STORE``, under a key prefix per assignment), so none sleeps a second
    waiting for rank 0's store to listen. It moves when rank 0's pod or address changes."""

    def __init__(self, port, log):
        self.port, self.log = port, log
        self.store, self.addr, self.told = None, None, False

    def env(self, a, host, tag):
        """The ranks' environment for assignment ``a`` (tagged ``tag``); hosts the store first when
        ``host`` (this pod holds rank 0). A store that cannot be hosted (its port is taken) is an error:
        every pod's ranks connect to it. Where torch is not importable (the same image in every pod), no
        store is hosted and the ranks get nothing more."""
        import importlib.util

        if importlib.util.find_spec("torch") is None:  # ranks without torch: nothing to meet in (every pod alike)
            if not self.told:
                self.log("torch is not importable here: no rendezvous store is hosted")
                self.told = True
            return {}
        addr = a.get("masterAddr") or "127.0.0.1"
        if not host:
            self.store = self.addr = None  # rank 0 moved away: its new pod hosts the store
        elif self.store is None or self.addr != addr:
            import datetime

            import torch.distributed as dist

            self.store = None  # the one hosted before (if any) frees its port first
            self.store = tcp_store(dist, addr, self.port, None, True, datetime.timedelta(seconds=900),
                                   wait_for_workers=False)
            self.addr = addr
            self.log("hosting the rendezvous store at %s:%d" % (addr, self.port))
        return {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": tag}

