"""What a launcher tells a rank through its environment that the training calls read: the job's name
(``TENPLEX_JOB``) and the rank's numbers (``RANK``, ``WORLD_SIZE``)."""

import os


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def job_name(job):
    """``job``, else ``TENPLEX_JOB`` (``ValueError`` when neither is given)."""
    job = job or os.environ.get("TENPLEX_JOB")
    if not job:
        raise ValueError("no job: pass job= or set TENPLEX_JOB")
    return job
