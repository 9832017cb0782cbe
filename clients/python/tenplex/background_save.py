"""Saves that finish in the background (``tenplex.save(..., blocking=False)``): the one pending save of
this process, its :class:`SaveHandle`, and :func:`wait_saves`, which the next save or load calls first
and which raises the pending save's error once."""

import atexit
import threading
from typing import Any, Dict, Optional

from .errors import TenplexError


class SaveHandle:
    """A save running in the background (``save(..., blocking=False)``): :meth:`wait` returns the
    daemon's seal answer or raises the save's error; :meth:`done` says whether it has ended."""

    def __init__(self, job, step, rank, finish):
        self.job, self.step, self.rank = job, step, rank
        self._ended = threading.Event()
        self._result = None
        self._error = None
        self._reported = False
        self._thread = threading.Thread(target=self._run, args=(finish,), name="tenplex-save-%s" % step, daemon=True)
        self._thread.start()

    def _run(self, finish):
        try:
            self._result = finish()
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits
            self._error = e
        finally:
            self._ended.set()

    def done(self) -> bool:
        return self._ended.is_set()

    def wait(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The seal answer, once the save has ended; raises its error, or ``TimeoutError``."""
        if not self._ended.wait(timeout):
            raise TimeoutError("the save of step %s of job %s has not ended after %ss" % (self.step, self.job, timeout))
        if self._error is not None:
            self._reported = True  # the caller saw it: the next save does not raise it again
            raise self._error
        return self._result

    result = wait

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The save's error (``None`` when it succeeded), once it has ended."""
        try:
            self.wait(timeout)
            return None
        except TimeoutError:
            raise
        except BaseException as e:  # noqa: BLE001
            return e


_pending = None


def start(job, step, rank, finish):
    """Runs ``finish`` (publish and seal) in the background as this process's pending save; its handle."""
    global _pending
    _pending = SaveHandle(job, step, rank, finish)
    return _pending


def wait_saves(timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """Waits for this process's asynchronous save, if one runs; raises its error (once)."""
    global _pending
    h = _pending
    if h is None:
        return None
    reported = h._reported
    try:
        return h.wait(timeout)
    except TimeoutError:
        raise
    except BaseException as e:
        if reported:
            return None
        raise TenplexError("the asynchronous save of step %s of job %s failed: %s" % (h.step, h.job, e)) from e
    finally:
        if h.done() and _pending is h:
            _pending = None


atexit.register(lambda: _pending is not None and _pending._ended.wait())
