"""What a launcher tells a rank through its environment that the training calls read: the job's name
(``TENPLEX_JOB``) and the rank's numbers (``RANK``, ``WORLD_SIZE``); and the launcher itself
(``TENPLEX_LAUNCHER_PID``): a rank does not outlive it."""

import os
import subprocess
import sys


MEMORY_TUNABLE = "glibc.malloc.hugetlb=1"
"""What ``tenplex run`` starts its ranks with (docs/LIVE.md): malloc asks for transparent huge pages."""
_ASCII_SPACE = " \t\n\r\x0b\x0c"


def with_memory_tunables(env):
    """``env`` for a rank's process with :data:`MEMORY_TUNABLE` (glibc 2.35 and later), as ``tenplex run``
    gives its ranks (``RankMemoryTunables``): appended to the user's ``GLIBC_TUNABLES`` unless the user set
    that tunable there; left out with ``TENPLEX_HUGEPAGES=0``. A new dict."""
    env = dict(env)
    if env.get("TENPLEX_HUGEPAGES", "1").strip(_ASCII_SPACE).lower() in ("0", "off", "false", "no"):
        return env
    t = env.get("GLIBC_TUNABLES", "")
    key = MEMORY_TUNABLE.split("=", 1)[0]
    if any(kv.split("=", 1)[0] == key for kv in t.split(":") if "=" in kv):  # keys as glibc reads them
        return env
    env["GLIBC_TUNABLES"] = t + ":" + MEMORY_TUNABLE if t else MEMORY_TUNABLE
    return env


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def job_name(job):
    """``job``, else ``TENPLEX_JOB``; ``ValueError`` when neither is given, or for a name the daemon
    refuses (docs/API.md, "Job names"): a job name is 1 to 255 bytes of UTF-8 without ``/`` or NUL,
    and is not ``.`` or ``..``."""
    job = job or os.environ.get("TENPLEX_JOB")
    if not job:
        raise ValueError("no job: pass job= or set TENPLEX_JOB")
    if "/" in job or "\0" in job or job in (".", "..") or len(job.encode("utf-8")) > 255:
        raise ValueError("bad job name %r: a job name is 1 to 255 bytes of UTF-8 without '/' or NUL, and is not "
                         "'.' or '..'" % job[:64])
    return job


_watching = []

# The watcher process: a separate interpreter, because a rank blocked in a torch call that holds the GIL
# (e.g. TCPStore connecting to a store that is gone) never runs a thread of its own again.
_WATCHER = r"""
import os, signal, sys, time
def started(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else fields[19]
    except (OSError, IndexError):
        return None
launcher, born, rank, rank_born, interval, name = sys.argv[1:7]
launcher, rank, interval = int(launcher), int(rank), float(interval)
while started(rank) == rank_born:
    if started(launcher) != born:
        try:  # the launcher's end of the output may be gone with it
            sys.stderr.write("tenplex: %s: the launcher (pid %d) is gone; ending it\n" % (name, launcher))
            sys.stderr.flush()
        except OSError:
            pass
        os.kill(rank, signal.SIGTERM)
        end = time.time() + 10
        while started(rank) == rank_born and time.time() < end:
            time.sleep(0.05)
        if started(rank) == rank_born:
            os.kill(rank, signal.SIGKILL)
        sys.exit(0)
    time.sleep(interval)
"""


def _started(pid):
    """The start time of process ``pid`` (``/proc/<pid>/stat`` field 22), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def watch_launcher(env=None, interval=0.5):
    """Ends this process when the launcher that started it is gone (``tenplex run`` puts its process id
    in ``TENPLEX_LAUNCHER_PID``): a launcher that was SIGKILLed cannot end its ranks, and a rank without
    one would train on, or wait for a role no one hands out. Once per process, a small watcher process
    (no torch) looks every ``interval`` seconds; when the launcher's process is gone or is another process
    (its start time differs: the id was reused), also when it was gone before this was called, it says so
    on stderr and ends the rank (SIGTERM, SIGKILL 10 s later); it exits with the rank. Without the
    variable, or where ``/proc`` cannot tell, nothing is watched. The watcher process, or None."""
    env = os.environ if env is None else env
    pid = int(env.get("TENPLEX_LAUNCHER_PID") or 0)
    me = _started(os.getpid())
    if pid <= 0 or _watching or me is None:
        return None  # nothing to watch, watched already, or no /proc to tell
    born = _started(pid) or "gone"  # gone: the launcher ended before this process got here
    name = "rank %s of job %s (pid %d)" % (env.get("RANK", "?"), env.get("TENPLEX_JOB", "?"), os.getpid())
    watcher = subprocess.Popen([sys.executable, "-S", "-c", _WATCHER, str(pid), born, str(os.getpid()), me,
                                str(interval), name], stdin=subprocess.DEVNULL, close_fds=True)
    _watching.append(watcher)
    return watcher
