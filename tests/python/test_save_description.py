"""A save whose model spec contradicts the saved shards, against a real daemon (TENPLEX_ADDR): a
row-parallel weight described as column-parallel (described shard [16, 32], saved [32, 16]) or a
tensor saved with another dtype than described is refused at the save itself, as a
:class:`tenplex.TenplexError` (400, ``bad_request``) whose message names the tensor, its partition
and both shapes; nothing is sealed; the same save with the right spec seals and loads back. Runs
over shared memory or REST as the client chooses (``TENPLEX_SHM=0``: REST). Prints OK at the end;
any failure raises."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import tenplex  # noqa: E402
from tenplex.stop import generations  # noqa: E402

ADDR = os.environ["TENPLEX_ADDR"]
c = tenplex.Client(ADDR)
JOB = "pydesc-%d" % os.getpid()
CONFIG = {"tp": 2, "pp": 1, "dp": 1, "devicesPerWorker": 2}


class Block(nn.Module):
    """One tensor rank's part of a 32-wide MLP under T = 2: fc1 column-parallel, fc2 row-parallel."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 16, bias=False)  # weight [16, 32]: rows 16 of 32
        self.fc2 = nn.Linear(16, 32, bias=False)  # weight [32, 16]: columns 16 of 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block()])
        self.norm = nn.LayerNorm(32)


def spec(fc2_dim=1, norm_dtype="f32"):
    def t(name, shape, partition, dtype="f32", **at):
        return dict(name=name, dtype=dtype, shape=shape, partition=partition, **at)
    return {"layers": 1, "values": [{"key": "iteration", "scope": "global"}], "tensors": [
        t("layers.0.fc1.weight", [32, 32], {"kind": "split", "dim": 0}, layer=0),
        t("layers.0.fc2.weight", [32, 32], {"kind": "split", "dim": fc2_dim}, layer=0),
        t("norm.weight", [32], {"kind": "replicated"}, norm_dtype, stage="last"),
        t("norm.bias", [32], {"kind": "replicated"}, stage="last")]}


torch.manual_seed(0)
ranks = [Model() for _ in range(2)]


def save(rank, step, description):
    state = {"model": ranks[rank].state_dict(), "iteration": step}
    return tenplex.save(state, job=JOB, step=step, rank=rank, world=2, config=CONFIG, client=c, spec=description)


def refused(rank, step, description):
    try:
        save(rank, step, description)
    except tenplex.TenplexError as e:
        assert e.status == 400 and e.code == "bad_request", (e.status, e.code, str(e))
        return str(e)
    raise AssertionError("the save of rank %d at step %d with a wrong spec was sealed" % (rank, step))


def sealed_steps():
    return {int(g["step"]): g for g in generations(JOB, c).get("generations", ())}


# a row-parallel weight described as column-parallel
message = refused(0, 10, spec(fc2_dim=0))
print(message)
for part in ("rank 0 of job %s does not match the model spec stored with the job" % JOB,
             "tensor layers.0.fc2.weight (", "f32[32, 32] with partition column (split dim 0)",
             "is described as f32[16, 32] on rank 0 but saved as f32[32, 16]", "nothing was sealed"):
    assert part in message, (part, message)
assert 10 not in sealed_steps(), sealed_steps()

# the same save, described right, seals; the generation completes with both ranks
first = save(0, 10, spec())
assert first["complete"] is False, first
second = save(1, 10, spec())
assert second["complete"] is True, second
state, step = tenplex.load(job=JOB, rank=1, client=c)
assert step == 10 and torch.equal(state["model"]["layers.0.fc2.weight"], ranks[1].layers[0].fc2.weight.detach())

# a dtype the spec contradicts: refused, the generation of step 20 stays incomplete until the spec is right
message = refused(1, 20, spec(norm_dtype="bf16"))
assert "tensor norm.weight (" in message and "bf16[32] with partition replicated" in message, message
assert "is described as bf16[32] on rank 1 but saved as f32[32]" in message, message
assert save(0, 20, spec())["complete"] is False
assert sealed_steps()[20]["complete"] is False and sealed_steps()[20]["sealedRanks"] == [0], sealed_steps()
assert save(1, 20, spec())["complete"] is True
print("OK")
