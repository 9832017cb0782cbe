"""Where things are: the store paths of a job (``/job/<job>/...``) and the daemon's REST routes.

This is the only module of the client that spells these paths and routes; the others ask it.
Store paths are plain (unquoted) strings; the ``*_route`` functions return the quoted URL path of
a request (the part after the daemon's address)."""

import os
from urllib.parse import quote

API = "/api/v1"


def quote_path(path):
    """A store path made safe for a URL (``/`` kept)."""
    return quote(path, safe="/")


# ---------------------------------------------------------------- store paths of a job

def job_dir(job):
    return "/job/%s" % job


def save_dir(job, rank):
    """Where ``rank`` saves its state for the next seal."""
    return "%s/save/%d" % (job_dir(job), rank)


def load_dir(job, rank):
    """What the last reconfiguration prepared for ``rank``."""
    return "%s/load/%d" % (job_dir(job), rank)


def iter_file(job):
    """The step of what ``load_dir`` holds."""
    return "%s/iter" % job_dir(job)


def model_file(job):
    """The job's model description (docs/PTC.md)."""
    return "%s/model.json" % job_dir(job)


def rules_file(job):
    """The job's partition rules, from which the daemon infers its model when no description is stored."""
    return "%s/rules.json" % job_dir(job)


def generation_dir(job, step):
    return "%s/generations/%d" % (job_dir(job), step)


def assignment_file(job):
    """The Kubernetes adapter's assignment of ranks to pods."""
    return "%s/kubernetes/assignment.json" % job_dir(job)


def dataset_dir(job):
    """The job's dataset view (simple layout): ``mount.json`` and ``rank-<r>/``."""
    return "%s/dataset" % job_dir(job)


def dataset_rank_dir(job, rank):
    return "%s/rank-%d" % (dataset_dir(job), rank)


def dataset_head_file(job):
    """The prototype layout's ``head.txt`` (it names the rank directories' list)."""
    return "%s/head.txt" % job_dir(job)


def under(mount, path):
    """A store path as a file below the FUSE mount point ``mount``."""
    return os.path.join(mount, path.lstrip("/"))


# ---------------------------------------------------------------- store routes

def tensors_route(path):
    return API + "/tensors" + quote_path(path)


def files_route(path):
    return API + "/files" + quote_path(path)


def dirs_route(path):
    return API + "/dirs" + quote_path(path)


# ---------------------------------------------------------------- job routes

def job_route(job):
    """The job's routes: its name quoted as one path segment (a ``/`` in it would name another job)."""
    return "%s/jobs/%s" % (API, quote(job, safe=""))


def stop_route(job):
    """The job's stop flag: GET asks (``?step=S``), POST raises, DELETE clears."""
    return job_route(job) + "/stop"


def seal_route(job, step, rank):
    """Seals ``rank`` of step ``step``."""
    return "%s/saves/%d/ranks/%d" % (job_route(job), step, rank)


def generations_route(job):
    return job_route(job) + "/generations"


def downtime_route(job):
    """The job's downtime: a rank's report of a reconfiguration's phases (POST), the splits (GET)."""
    return job_route(job) + "/downtime"


def rendezvous_route(job, what=""):
    """The job's torchrun rendezvous: GET its state (``?node=``); ``what`` ``join``, ``store``, ``target``,
    ``close`` (POST)."""
    return job_route(job) + "/rendezvous" + ("/" + what if what else "")


def load_route(job, rank):
    """What ``rank`` loads: the path, step and source the daemon chose (GET)."""
    return "%s/load/%d" % (job_route(job), rank)


# ---------------------------------------------------------------- shared-memory routes of a job

def shared_route(job, handle=None):
    """The job's shared-memory handouts (GET lists them); with ``handle``: one of them (DELETE ends it)."""
    return job_route(job) + "/shared" + ("" if handle is None else "/" + quote_path(handle))


def shared_saves_route(job, rank):
    """Reserves shared memory for a save of ``rank`` (POST)."""
    return "%s/saves/%d" % (shared_route(job), rank)


def shared_commit_route(job, rank, handle):
    """Publishes and seals a filled reservation (POST)."""
    return "%s/saves/%d/%s/commit" % (shared_route(job), rank, quote_path(handle))


def shared_loads_route(job, rank):
    """Pins what ``rank`` loads, for reading through shared memory (POST)."""
    return "%s/loads/%d" % (shared_route(job), rank)
