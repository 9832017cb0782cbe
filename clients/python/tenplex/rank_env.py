"""What a launcher tells a rank through its environment that the training calls read: the job's name
(``TENPLEX_JOB``) and the rank's numbers (``RANK``, ``WORLD_SIZE``)."""

import os


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
