"""A load that reads over REST what it could have mapped from shared memory says so and why, against a
real daemon whose memory budget (TENPLEX_ADDR, started with --memory-limit 48m) has no room to copy a
state saved over REST into shared memory: the bytes are exact, the rank's log has a warning naming the
reason, ``tenplex.last_loaded()`` has it, and the rank's next downtime report carries it as a slow
path of its load. A load over REST by choice (``shared=False``) is no slow path. Prints OK."""

import logging
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402
from tenplex import downtime  # noqa: E402

c = tenplex.Client(os.environ["TENPLEX_ADDR"])
JOB = "slowload"


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append((record.levelno, record.getMessage()))


seen = Lines()
logging.getLogger("tenplex").addHandler(seen)
logging.getLogger("tenplex").setLevel(logging.INFO)

# 20 MB saved over REST: a copy into shared memory would leave less than a quarter of 48 MiB free
state = {"w": torch.randn(5003, 1001, generator=torch.Generator().manual_seed(5)), "step": 1}
tenplex.save(state, JOB, step=1, rank=0, world=1, client=c, shared=False)
assert tenplex.last_saved()["via"] == "rest", tenplex.last_saved()

downtime.clear()
back, step = tenplex.load(JOB, 0, c)
assert step == 1 and torch.equal(back["w"], state["w"]), "the bytes read over REST are the ones saved"
went = tenplex.last_loaded()
assert went["via"] == "shared_memory" and went["rest_tensors"] == 1, went
assert "memory budget" in went["rest_reason"] and "--memory-limit" in went["rest_reason"], went
warned = [m for lvl, m in seen.lines if lvl == logging.WARNING and "over REST" in m]
assert len(warned) == 1 and "1 of the loaded tensors over REST, not from shared memory" in warned[0] \
    and went["rest_reason"] in warned[0], seen.lines
body = downtime.body(0, 1, [("load", 1.5e9)], downtime._slow)
assert body["slow"] == [{"phase": "load", "what": "1 of the loaded tensors over REST", "why": went["rest_reason"]}], body

# over REST by choice: said at INFO, no slow path
downtime.clear()
seen.lines.clear()
back, _ = tenplex.load(JOB, 0, c, shared=False)
assert torch.equal(back["w"], state["w"])
assert tenplex.last_loaded()["rest_reason"].startswith("shared memory turned off"), tenplex.last_loaded()
assert not downtime._slow and not [m for lvl, m in seen.lines if lvl >= logging.WARNING], seen.lines
c.request("DELETE", "/api/v1/jobs/" + JOB)
print("OK")
