"""An optimizer's state_dict saved and loaded as it is against a real daemon (TENPLEX_ADDR): Adam's
int-keyed moments come back int-keyed, so a fresh optimizer that loads them takes the same next step
bit for bit; states that cannot round-trip are refused before anything is written. Prints OK at the
end; any failure raises."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402

import tenplex  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)


def model_and_adam(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


def step(model, opt):
    torch.manual_seed(99)
    opt.zero_grad()
    model(torch.randn(16, 4)).pow(2).mean().backward()
    opt.step()


model, opt = model_and_adam(0)
step(model, opt)
tenplex.upload({"model": model.state_dict(), "optimizer": opt.state_dict()}, "/job/pyopt/adam", client=c)
back = tenplex.download("/job/pyopt/adam", client=c)
assert sorted(back["optimizer"]["state"]) == sorted(opt.state_dict()["state"]), list(back["optimizer"]["state"])
assert all(type(k) is int for k in back["optimizer"]["state"])

model2, opt2 = model_and_adam(1)
model2.load_state_dict(back["model"])
opt2.load_state_dict(back["optimizer"])
for p in opt2.state_dict()["state"].values():
    assert "exp_avg" in p and "exp_avg_sq" in p  # the moments are attached to their parameters
step(model, opt)
step(model2, opt2)
for (n, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
    assert torch.equal(a, b), "%s differs by %g" % (n, (a - b).abs().max())

# ---- refused at save time, with the key path, and nothing written
for bad, where in (({"opt": {"state": {(0, 1): torch.zeros(1)}}}, "at 'opt/state'"),
                   ({"opt": {"lr": {0.5: 1}}}, "0.5 (a float) at 'opt/lr'"),
                   ({"opt": {0: torch.zeros(1), "0": 1}}, "'0' collides with key 0")):
    try:
        tenplex.upload(bad, "/job/pyopt/bad", client=c)
        raise AssertionError("saved %r" % (bad,))
    except tenplex.UnsavableState as e:
        assert isinstance(e, tenplex.TenplexError) and where in str(e), str(e)
    assert c.request("GET", "/api/v1/dirs/job/pyopt/bad", ok=(200, 404)).status_code == 404
tenplex.save({"kept": 7}, job="pyopt", step=0, rank=0, world=1, client=c)
try:
    tenplex.save({"optimizer": {"state": {1.5: 0}}}, job="pyopt", step=1, rank=0, world=1, client=c)
    raise AssertionError("saved a float key")
except tenplex.UnsavableState as e:
    assert "1.5 (a float) at 'optimizer/state'" in str(e), str(e)
listing = c.request("GET", "/api/v1/dirs/job/pyopt/save/0").json()  # the previous save is untouched
assert [e["name"] for e in listing["entries"]] == ["kept.int"], listing

print("OK")
