"""The tenplex Python client against a real daemon (TENPLEX_ADDR): save/load round trips of every
supported kind of value, the prototype's layout on the wire, the prototype client's bugs not
repeated, errors with the daemon's reason, the stop flag, optimizer state by parameter name, and an
installation from the checkout with pip (no network). Prints OK at the end; any failure raises."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402
import requests  # noqa: E402
import torch  # noqa: E402

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)


def same(a, b, where="state"):
    assert type(a) is type(b), "%s: %s vs %s" % (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), "%s: keys %s vs %s" % (where, list(a), list(b))
        for k in a:
            same(a[k], b[k], where + "." + str(k))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (where, i))
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, "%s: %s%s vs %s%s" % (where, a.dtype, a.shape, b.dtype, b.shape)
        assert torch.equal(a.view(torch.int16) if a.dtype == torch.bfloat16 else a,
                           b.view(torch.int16) if b.dtype == torch.bfloat16 else b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), where
    else:
        assert a == b, "%s: %r vs %r" % (where, a, b)


# ---- every dtype, scalars, empty containers, plain values
g = torch.Generator().manual_seed(1)
tensors = {
    "f64": torch.randn(3, 4, dtype=torch.float64, generator=g),
    "f32": torch.randn(5, dtype=torch.float32, generator=g),
    "f16": torch.randn(2, 2, generator=g).half(),
    "bf16": torch.randn(7, generator=g).to(torch.bfloat16),
    "i64": torch.arange(-3, 3, dtype=torch.int64),
    "i32": torch.tensor([[1, -2], [3, 4]], dtype=torch.int32),
    "i16": torch.tensor([-7], dtype=torch.int16),
    "i8": torch.tensor([-1, 2], dtype=torch.int8),
    "u8": torch.tensor([255, 0], dtype=torch.uint8),
    "bool": torch.tensor([True, False, True]),
    "scalar": torch.tensor(2.5, dtype=torch.float64),
    "empty": torch.zeros(0, 3),
    "strided": torch.arange(12.).reshape(3, 4).t(),  # not contiguous: saved as its values
}
state = {
    "model": tensors,
    "values": {"no": False, "yes": True, "n": 12, "x": 0.1, "big": 2 ** 70, "s": "héllo", "none": None,
               "raw": b"\x00\xff", "args": argparse.Namespace(lr=0.5, name="gpt")},
    "empty_list": [], "empty_dict": {}, "empty_tuple": (),
    "nested": [1, [2.5, "x"], ({"a": torch.ones(2)},)],
}
answer = tenplex.save(state, job="pyc", step=3, rank=0, world=1, config={"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1},
                      client=c)
assert answer["complete"] and answer["tensors"] == len(tensors) + 1, answer
back = tenplex.download("/job/pyc/save/0", c)
expected = dict(state)
expected["model"] = dict(tensors, strided=tensors["strided"].contiguous())
same(expected, back)
assert back["values"]["no"] is False and back["empty_list"] == [] and back["model"]["scalar"].dim() == 0

# numpy in, numpy out, a numpy scalar as that scalar (bf16 is not a numpy dtype: its bit patterns come back as uint16)
arrays = {"a": np.arange(6, dtype=np.uint16).reshape(2, 3), "b": np.float64(1.25), "c": np.array([1, 2], np.uint64)}
tenplex.upload(arrays, "/job/pyc/np", c)
nb = tenplex.download("/job/pyc/np", c, as_torch=False)
same(arrays, nb)
assert type(tenplex.download("/job/pyc/np", c)["b"]) is np.float64  # as saved, with torch installed too

# ---- the prototype's layout, visible with plain REST
listing = requests.get(ADDR + "/api/v1/dirs/job/pyc/save/0?recursive=true&sidecars=true").json()["entries"]
paths = [e["path"][len("/job/pyc/save/0/"):] for e in listing]
for p in ["model/f64.numpy.ndarray", "model/f64.numpy.ndarray.meta", "values/no.bool", "values/n.int", "values/none.none",
          "values/args.argparse.Namespace", "empty_list/dir.meta", "nested/dir.meta", "nested/1/1.str",
          "nested/2/0/a.numpy.ndarray"]:
    assert p in paths, (p, paths)
assert requests.get(ADDR + "/api/v1/files/job/pyc/save/0/values/no.bool").text == "False"
assert requests.get(ADDR + "/api/v1/files/job/pyc/save/0/nested/dir.meta").text == "list\n3"
meta = requests.get(ADDR + "/api/v1/files/job/pyc/save/0/model/f64.numpy.ndarray.meta").text
assert meta == "f64\n2\n3\n4\n", repr(meta)
# the prototype's own query route reads the same tensor
q = requests.get(ADDR + "/query", params={"path": "/job/pyc/save/0/model/f64.numpy.ndarray"}, headers={"Content-Type": "x-tensor"})
assert q.headers["x-tensor-dims"] == "3,4" and np.array_equal(np.frombuffer(q.content, np.float64).reshape(3, 4),
                                                              tensors["f64"].numpy())

# ---- errors carry the daemon's reason; nothing half-written
try:
    tenplex.save({"bad": object()}, job="pyc", step=4, rank=0, world=1, client=c)
    raise AssertionError("an object() was saved")
except TypeError as e:
    assert "cannot save a object" in str(e), e
try:
    tenplex.save({"x": torch.ones(1)}, job="pyc", step=2, rank=0, world=1, client=c)  # not newer than generation 3
    raise AssertionError("an older step was sealed")
except tenplex.TenplexError as e:
    assert e.status == 409 and "not newer than the complete generation 3" in e.reason, (e.status, e.reason)
try:
    tenplex.save({"x": torch.ones(1)}, job="pyc", step=9, rank=5, world=2, client=c)
    raise AssertionError("rank 5 of 2 was sealed")
except tenplex.TenplexError as e:
    assert e.status == 400 and "rank" in e.reason, (e.status, e.reason)
loaded, loaded_step = tenplex.load(job="pyc", rank=0, client=c)  # no reconfiguration: the latest generation
assert loaded_step == 3 and tenplex.last_loaded()["source"] == "generation", tenplex.last_loaded()
same(expected, loaded)
try:
    tenplex.Client("http://127.0.0.1:9").request("GET", "/api/v1/health")
    raise AssertionError("reached port 9")
except tenplex.TenplexError as e:
    assert "cannot reach the tenplex daemon" in str(e)

# ---- the stop flag: raised for step 5, seen from step 5 on, cleared; the prototype's route agrees
assert not tenplex.should_stop("pyc", 0, client=c)
requests.post(ADDR + "/api/v1/jobs/pyc/stop", json={"atStep": 5}).raise_for_status()
assert not tenplex.should_stop("pyc", 4, client=c)
assert tenplex.should_stop("pyc", 5, client=c) and tenplex.should_stop("pyc", 6, client=c)
assert requests.get(ADDR + "/stop", params={"job": "pyc", "step": "4"}).text == "run"
assert requests.get(ADDR + "/stop").text == "stop"
requests.delete(ADDR + "/api/v1/jobs/pyc/stop").raise_for_status()
assert not tenplex.should_stop("pyc", 9, client=c) and requests.get(ADDR + "/stop").text == "run"
r = requests.get(ADDR + "/api/v1/jobs/pyc/stop", params={"step": "-1"})
assert r.status_code == 400 and "step" in r.text, (r.status_code, r.text)

# ---- optimizer state keyed by parameter name, loaded into another optimizer
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
opt = torch.optim.Adam(net.parameters(), lr=0.01)
for _ in range(3):
    opt.zero_grad()
    net(torch.randn(8, 4, dtype=torch.float64)).pow(2).mean().backward()
    opt.step()
by_name = tenplex.optimizer_state_by_name(opt, dict(net.named_parameters()))
assert set(by_name["exp_avg"]) == {"0.weight", "0.bias", "2.weight", "2.bias"} and by_name["step"] == 3.0
tenplex.upload({"model": net.state_dict(), "optimizer": by_name}, "/job/pyc/opt", c)
saved = tenplex.download("/job/pyc/opt", c)
net2 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
net2.load_state_dict(saved["model"])
opt2 = torch.optim.Adam(net2.parameters(), lr=0.5)
tenplex.load_optimizer_state_by_name(opt2, dict(net2.named_parameters()), saved["optimizer"])
x = torch.randn(8, 4, dtype=torch.float64)
for o, n in ((opt, net), (opt2, net2)):
    o.zero_grad()
    n(x).pow(2).mean().backward()
    o.step()
for (k, a), (_, b) in zip(net.state_dict().items(), net2.state_dict().items()):
    assert torch.equal(a, b), k  # same lr (restored from param_groups), same moments, same step

# ---- copy=False loads in place: the loaded tensors become the state (no deep copy), stepping equal to
# load_state_dict's; the saved lr wins over the new optimizer's; a wrong group count changes nothing
loaded = {k: ({n: t.clone() for n, t in v.items()} if isinstance(v, dict) else v) for k, v in saved["optimizer"].items()}
net3 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
net3.load_state_dict(saved["model"])
opt3 = torch.optim.Adam(net3.parameters(), lr=0.5)
named3 = dict(net3.named_parameters())
bad = dict(loaded, param_groups=loaded["param_groups"] * 2)
try:
    tenplex.load_optimizer_state_by_name(opt3, named3, bad, copy=False)
    raise AssertionError("two saved groups for one were taken")
except ValueError as e:
    assert "2 parameter groups, the optimizer 1" in str(e), e
assert not opt3.state and opt3.param_groups[0]["lr"] == 0.5, "a refused load changed the optimizer"
tenplex.load_optimizer_state_by_name(opt3, named3, loaded, copy=False)
assert opt3.param_groups[0]["lr"] == 0.01
for name, p in named3.items():
    assert opt3.state[p]["exp_avg"] is loaded["exp_avg"][name], "in place: the loaded tensor is the state"
net4 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()
net4.load_state_dict(saved["model"])
opt4 = torch.optim.Adam(net4.parameters(), lr=0.5)
tenplex.load_optimizer_state_by_name(opt4, dict(net4.named_parameters()), saved["optimizer"])
for o, n in ((opt3, net3), (opt4, net4)):
    for _ in range(3):
        o.zero_grad()
        n(x).pow(2).mean().backward()
        o.step()
for (k, a), (_, b) in zip(net3.state_dict().items(), net4.state_dict().items()):
    assert torch.equal(a, b), k
assert opt4.state_dict()["state"][0]["step"] == opt3.state_dict()["state"][0]["step"]

# ---- pip install from the checkout (pyproject.toml, setuptools backend), offline: no index, no build
# isolation (which would download setuptools), and none of this machine's pip configuration (no local
# wheel directories); the commands are the ones docs/CLIENTS.md gives
SRC = os.path.join(HERE, "..", "..", "clients", "python")
assert os.path.exists(os.path.join(SRC, "pyproject.toml")) and not os.path.exists(os.path.join(SRC, "setup.py"))
OFFLINE = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
OFFLINE.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
SHOW = "import tenplex, importlib.metadata as m; print(tenplex.__version__, m.version('tenplex'), tenplex.__file__)"
# torchrun finds the rendezvous backend through the installed distribution's entry point, and calls what it loads
HANDLER = ("import importlib.metadata as m; e = [x for x in m.entry_points(group='torchrun.handlers') if x.name == "
           "'tenplex']; assert len(e) == 1, e; make = e[0].load()(); print(e[0].value, make.__module__, make.__name__)")


def pip(*args):
    started = time.monotonic()
    out = subprocess.run(list(args), capture_output=True, text=True, env=OFFLINE, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "setup.py install" not in out.stdout + out.stderr, out.stdout + out.stderr  # not the legacy path
    assert time.monotonic() - started < 60, "an offline install that takes this long is retrying an index"
    return out


with tempfile.TemporaryDirectory() as d:
    src = shutil.copytree(SRC, d + "/src", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # builds leave the checkout clean
    # 1. a venv that sees Debian's numpy/requests (dependencies are checked, found there, not fetched)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", d + "/venv"], check=True)
    pip(d + "/venv/bin/pip", "install", "--no-index", "--no-build-isolation", src)
    v = subprocess.run([d + "/venv/bin/python", "-c", SHOW], capture_output=True, text=True, cwd=d)
    assert v.returncode == 0 and v.stdout.startswith("0.1.0 0.1.0 ") and "site-packages" in v.stdout, v.stdout + v.stderr
    v = subprocess.run([d + "/venv/bin/python", "-c", HANDLER], capture_output=True, text=True, cwd=d)
    assert v.returncode == 0 and v.stdout.split() == ["tenplex.launchers.torchrun_rendezvous:handler_creator",
                                                      "tenplex.launchers.torchrun_rendezvous", "create_handler"], \
        v.stdout + v.stderr
    # 2. no venv: Debian's python3 into a target directory put on PYTHONPATH (dependencies from Debian)
    pip("/usr/bin/python3", "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps",
        "--target", d + "/target", src)
    v = subprocess.run(["/usr/bin/python3", "-c", SHOW], capture_output=True, text=True, cwd=d,
                       env=dict(OFFLINE, PYTHONPATH=d + "/target"))
    assert v.returncode == 0 and v.stdout.startswith("0.1.0 0.1.0 " + d + "/target/"), v.stdout + v.stderr

print(json.dumps({"roundtrip_tensors": len(tensors), "layout_paths": len(paths)}))
print("OK")
