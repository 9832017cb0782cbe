"""The client's errors: what the daemon refused or could not serve, and a missing checkpoint."""


class TenplexError(Exception):
    """A request the daemon refused or could not serve; ``status`` and ``reason`` are the daemon's.

    ``code`` is the daemon's machine-readable error kind (its ``X-Tenplex-Error-Code`` header, e.g.
    ``not_found``, ``exists``, ``wrong_type``) when the answer carried one, else ``None``."""

    def __init__(self, message, status=None, reason=None, code=None):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.code = code


class NoCheckpoint(TenplexError, LookupError):
    """There is nothing to load for this job and rank (a first start)."""

    @staticmethod
    def message(rank, job, reason):
        """The daemon's reason, which names the rank and job already, else the reason after a line
        that names them."""
        head = "nothing to load for rank %d of job %s" % (rank, job)
        if reason and "rank %d" % rank in reason and "job %s" % job in reason:
            return reason
        return "%s: %s" % (head, reason) if reason else head


class UnknownJob(TenplexError, LookupError):
    """The daemon does not know the job (a misspelt name?): nothing was saved for it there and no
    stop flag raised. A job is created by its first save (or ``PUT /api/v1/dirs/job/<job>``)."""


class UnsavableState(TenplexError, ValueError):
    """A state that cannot be saved so that it loads back exactly (a key of another type than str or
    int, a key that cannot be a name, names that collide); raised before anything is written."""


class ConfigMismatch(TenplexError, ValueError):
    """What a rank would load was saved under another parallel configuration (T, P, D) than the
    rank's: the message names both. Reconfigure the job first, or use another job name."""
