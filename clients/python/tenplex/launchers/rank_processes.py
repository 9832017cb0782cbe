"""The rank processes a pod launcher in live mode started on its pod, by rank: started, seen to exit, and
ended when a change relaunches them (:mod:`tenplex.launchers.pod_live`)."""

import os
import subprocess
import time

from ..rank_env import with_memory_tunables
from .assignment import log


class RankProcesses:
    """This pod's rank processes, by rank."""

    def __init__(self):
        self.procs = {}

    def start(self, rank, command, env):
        # TENPLEX_LAUNCHER_PID: the rank exits when this launcher is gone (tenplex.rank_env.watch_launcher)
        self.procs[rank] = subprocess.Popen(command, env=with_memory_tunables(dict(
            env, TENPLEX_SPAWN_TIME="%.6f" % time.time(), TENPLEX_LAUNCHER_PID=str(os.getpid()))))

    def alive(self):
        return sorted(self.procs)

    def pids(self):
        return {r: p.pid for r, p in self.procs.items()}

    def exited(self):
        """``[(rank, status)]`` of the processes that exited since the last call (forgotten)."""
        out = [(r, p.returncode) for r, p in self.procs.items() if p.poll() is not None]
        for r, _ in out:
            del self.procs[r]
        return out

    def end(self, seconds):
        """Waits up to ``seconds`` for every process to exit (they were told to), then kills the rest;
        ``{rank: exit status}``."""
        deadline = time.time() + seconds
        codes = {}
        for r, p in sorted(self.procs.items()):
            try:
                codes[r] = p.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                if seconds > 0:
                    log("rank %d did not exit within %.0f s; ending it" % (r, seconds))
                p.kill()
                codes[r] = p.wait()
        self.procs.clear()
        return codes

    def kill(self):
        self.end(0.0)
