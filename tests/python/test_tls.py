"""The tenplex Python client against a daemon with TLS and a token (TENPLEX_ADDR is https://...):
the CA from TENPLEX_CA or ca=, the token from TENPLEX_TOKEN_FILE, save/load byte for byte, and
clear errors without the CA or with a wrong token. Prints OK at the end; any failure raises."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
CA = os.environ["TENPLEX_CA"]
assert ADDR.startswith("https://"), ADDR
assert os.environ.get("TENPLEX_TOKEN_FILE") and not os.environ.get("TENPLEX_TOKEN")

c = tenplex.Client()  # everything from the environment
assert c.request("GET", "/api/v1/health").json()["status"] == "ok"
state = {"w": np.arange(12, dtype=np.float32).reshape(3, 4), "step": 7, "name": "tls"}
tenplex.save(state, job="tls", step=7, rank=0, world=1, client=c)
back = tenplex.download("/job/tls/save/0", client=c, as_torch=False)
assert np.array_equal(back["w"], state["w"]) and back["w"].dtype == np.float32, back
assert back["step"] == 7 and back["name"] == "tls", back

# the CA as an argument instead of the environment
del os.environ["TENPLEX_CA"]
assert tenplex.Client(ADDR, ca=CA).request("GET", "/api/v1/dirs/job/tls").status_code == 200

# without the CA the daemon's certificate is not trusted: a clear error, no request sent
try:
    tenplex.Client(ADDR).request("GET", "/api/v1/health")
    raise AssertionError("an untrusted certificate was accepted")
except tenplex.TenplexError as e:
    assert "cannot reach the tenplex daemon" in str(e), e

# a wrong token is refused
try:
    tenplex.Client(ADDR, token="wrong", ca=CA).request("GET", "/api/v1/dirs/job/tls")
    raise AssertionError("a wrong token was accepted")
except tenplex.TenplexError as e:
    assert e.status == 401, e

print("OK")
