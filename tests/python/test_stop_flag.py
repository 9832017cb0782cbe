"""The stop flag under torch.distributed against a real daemon (TENPLEX_ADDR): a real gloo group (one
rank, an in-process HashStore, a 60 s collective timeout) broadcasts its flag on the CPU and should_stop works
with it; the device choice for NCCL and mixed groups is checked on the backend strings only (no GPU
here). Prints OK at the end; any failure raises."""

import datetime
import faulthandler
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import requests  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import tenplex  # noqa: E402
from tenplex.wire import torch_values  # noqa: E402

# A hang anywhere (a collective, a store) ends the script with every thread's stack rather than holding the suite.
faulthandler.dump_traceback_later(int(os.environ.get("TENPLEX_HANG_S", "300")), exit=True)

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)

# ---- the decision on the backend's name (torch 1.13 answers "nccl"/"gloo", newer ones may answer mixed)
kind = torch_values.device_kind_for_backend
assert kind("nccl") == "cuda" and kind("NCCL") == "cuda"
assert kind("gloo") == "cpu" and kind("mpi") == "cpu" and kind("ucc") == "cpu"
assert kind("cpu:gloo,cuda:nccl") == "cpu" and kind("cuda:nccl,cpu:gloo") == "cpu"
assert kind("cuda:nccl") == "cuda"

# ---- a job the daemon does not know (a misspelt name): a clear error naming the known jobs, not False forever
requests.put(ADDR + "/api/v1/dirs/job/pyflag").raise_for_status()  # what a first save or `tenplex run` does
try:
    tenplex.should_stop("pyflgg", 0, client=c)
    raise AssertionError("should_stop of an unknown job answered")
except tenplex.UnknownJob as e:
    assert e.status == 404 and e.code == "not_found", (e.status, e.code)
    assert "pyflgg" in str(e) and "known jobs:" in str(e) and "pyflag" in str(e), str(e)
r = requests.post(ADDR + "/api/v1/jobs/pyflgg/resources", json={"size": 1, "devicesPerWorker": 1})
assert r.status_code == 404 and "pyflag" in r.text, (r.status_code, r.text)
assert requests.get(ADDR + "/stop", params={"job": "pyflgg"}).status_code == 404

# ---- a real gloo group of one rank: the flag lives on the CPU, the stop check works through it
store = dist.HashStore()  # one rank: no file, no lock, nothing outlives the process
dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
try:
    assert torch_values.flag_device() == torch.device("cpu")
    group = dist.new_group([0], backend="gloo")
    assert torch_values.flag_device(group) == torch.device("cpu")
    assert not tenplex.should_stop("pyflag", 0, client=c)
    requests.post(ADDR + "/api/v1/jobs/pyflag/stop", json={"atStep": 3}).raise_for_status()
    assert not tenplex.should_stop("pyflag", 2, client=c, group=group)
    assert tenplex.should_stop("pyflag", 3, client=c) and tenplex.should_stop("pyflag", 4, client=c, group=group)
    requests.delete(ADDR + "/api/v1/jobs/pyflag/stop").raise_for_status()
    assert not tenplex.should_stop("pyflag", 5, client=c)
finally:
    tenplex.end_process_group()

faulthandler.cancel_dump_traceback_later()
print("OK")
