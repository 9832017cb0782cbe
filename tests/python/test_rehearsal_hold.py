"""The rehearsal client against a real daemon (TENPLEX_ADDR) while a re-partition holds updates off:
the daemon answers 429 with Retry-After, the client retries, and the update lands once the hold ends
(here: an abort). Prints OK at the end; any failure raises."""

import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import requests  # noqa: E402

from tenplex.rehearsal import RehearsalBuffer  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
ROUTE = ADDR + "/api/v1/jobs/rhold/rehearsal"

buf = RehearsalBuffer("rhold", 0, classes=2, per_class=8, candidates=4, batch=4, addr=ADDR)
held = requests.post(ROUTE + "/hold")
assert held.status_code == 200, held.text
refused = requests.post(ROUTE + "/0/update", data=b"\0\0\0\0")
assert refused.status_code == 429 and refused.headers["Retry-After"] == "1", (refused.status_code, refused.headers)
assert refused.headers["X-Tenplex-Error-Code"] == "too_many_requests"

retrying = threading.Event()
real_sleep = __import__("time").sleep


def sleep(s):  # the client waits between tries: the hold ends while it does
    retrying.set()
    real_sleep(s)


sys.modules["tenplex.rehearsal"].time.sleep = sleep
buf.update(np.zeros((4, 3), "<f4"), np.array([0, 1, 0, 1]))
assert retrying.wait(30), "the client did not retry"
assert requests.post(ROUTE + "/abort").status_code == 200
buf.update(np.zeros((4, 3), "<f4"), np.array([0, 1, 0, 1]), wait=True)
status = buf.status()
assert status["representatives"] == 8, status
requests.delete(ROUTE)
buf.close()
print("OK")
