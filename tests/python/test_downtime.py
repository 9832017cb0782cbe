"""tenplex.downtime against a real daemon (TENPLEX_ADDR): marks, the report's body and route, and the marks
the checkpoint calls make by themselves in relaunch mode (a stop, the save after it, a relaunched
process's load and its first step), each reported once and then forgotten; a report the daemon refuses
is logged, never raised into training. Prints OK at the end; any failure raises."""

import logging
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import requests  # noqa: E402

import tenplex  # noqa: E402
from tenplex import downtime  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "pydowntime"
requests.put(ADDR + "/api/v1/dirs/job/" + JOB).raise_for_status()

# ---- marks: known phases only (the message names the phase), in order, with an explicit time too
try:
    downtime.mark("warmup")
    raise AssertionError("an unknown phase was marked")
except ValueError as e:
    assert "warmup" in str(e) and "first_step" in str(e), str(e)
downtime.clear()
downtime.mark("stop")
downtime.mark("save", at=12345.5)
assert [p for p, _ in downtime.marks()] == ["stop", "save"] and downtime.marks()[1][1] == 12345.5
downtime.clear()
assert downtime.marks() == []

# ---- the body: spawn only for a started process's phases; the daemon refuses a report of a step no change moved
os.environ[downtime.SPAWN_ENV] = "%.6f" % (time.time() - 1)
assert "spawn" not in downtime.body(0, 3, [("stop", time.time())])
assert downtime.body(1, 3, [("load", time.time())])["spawn"] > 0
del os.environ[downtime.SPAWN_ENV]
downtime.mark("stop")
try:
    downtime.report(c, JOB, 3, 0, background=False)
    raise AssertionError("a report of a step no resource change moved was kept")
except tenplex.TenplexError as e:
    assert e.status == 404 and "no resource change of job %s moved generation 3" % JOB in str(e), str(e)
assert downtime.marks() == [], "reported marks are forgotten"

# ---- a refused report (an unknown job) is logged on the background thread, and training goes on; a 404
# (nothing here to join it with: a rank of another worker's daemon) only at INFO, so it does not clutter
# the training's output
records = []
handler = logging.Handler()
handler.emit = records.append
logging.getLogger("tenplex").addHandler(handler)
logging.getLogger("tenplex").setLevel(logging.INFO)
downtime.mark("stop")
downtime.report(c, "nosuchjob", 3, 0)
downtime.wait_reports(30)
assert any("nosuchjob" in str(r.getMessage()) and r.levelno == logging.INFO for r in records), records
logging.getLogger("tenplex").setLevel(logging.NOTSET)

# ---- a daemon busy with other work (503) gets the report again, with a back-off
import http.server  # noqa: E402
import threading  # noqa: E402

answers = [503, 503, 200]
bodies = []


class Busy(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        code = answers.pop(0)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"kept": true, "changes": []}' if code == 200 else b"busy")

    def log_message(self, *args):
        pass


busy = http.server.HTTPServer(("127.0.0.1", 0), Busy)
threading.Thread(target=busy.serve_forever, daemon=True).start()
records.clear()
downtime.mark("stop")
downtime.report(tenplex.Client("127.0.0.1:%d" % busy.server_address[1]), JOB, 3, 0)
downtime.wait_reports(30)
busy.shutdown()
assert len(bodies) == 3 and answers == [] and bodies[0] == bodies[2], bodies
assert not records, [r.getMessage() for r in records]

# ---- relaunch mode through the checkpoint calls, for a real resource change: stop -> save (reported), then
#      load -> first step (reported), both kept by the change
posted = []
real_report = downtime.report


def spy(client, job, step, rank, background=True):
    posted.append((job, step, rank, [p for p, _ in downtime.marks()]))
    return real_report(client, job, step, rank, background=False)


downtime.report = spy
try:
    assert not tenplex.should_stop(JOB, 1, client=c)
    one = {"tp": 1, "pp": 1, "dp": 1}
    change = requests.post(ADDR + "/api/v1/jobs/%s/resources" % JOB, json={"size": 1, "devicesPerWorker": 1,
                                                                           "config": one, "atStep": 2})
    change.raise_for_status()
    change = change.json()["status"]
    assert tenplex.should_stop(JOB, 2, client=c) and tenplex.should_stop(JOB, 2, client=c)
    assert [p for p, _ in downtime.marks()] == ["stop"], "the stop is marked once: %s" % downtime.marks()
    tenplex.save({"w": np.arange(4.0)}, JOB, step=2, rank=0, world=1, config=dict(one, devicesPerWorker=1), client=c)
    assert posted == [(JOB, 2, 0, ["stop", "save"])], posted
    done = requests.get(ADDR + change, params={"wait": "true"}).json()
    assert done["state"] == "done" and done["generation"] == 2, done
    assert done["downtime"]["ranksStopped"] == 1, done
    state, step = tenplex.load(JOB, 0, c)
    assert step == 2 and list(state["w"]) == [0.0, 1.0, 2.0, 3.0]
    assert [p for p, _ in downtime.marks()] == ["relaunch", "load"], downtime.marks()
    assert not tenplex.should_stop(JOB, 2, client=c)  # before the first step: nothing yet
    assert len(posted) == 1
    assert not tenplex.should_stop(JOB, 3, client=c)  # the first step has ended
    assert posted[1] == (JOB, 2, 0, ["relaunch", "load", "first_step"]), posted
    split = requests.get(ADDR + change).json()["downtime"]
    assert split["complete"] and split["ranksStarted"] == 1, split
    assert not tenplex.should_stop(JOB, 4, client=c) and len(posted) == 2, "reported once per process"
    assert downtime.marks() == []
finally:
    downtime.report = real_report
print("OK")
