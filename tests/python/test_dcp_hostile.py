"""tenplex.dcp against what a hostile neighbour or a careless script puts in a job's trees, against a real
daemon (TENPLEX_ADDR), under torch 2.x, in one process (DCP without a process group):

* metadata that is not ours, names a dtype torch lacks, a chunk outside its tensor, a key outside the
  rank's tree, a rank outside the generation, or sizes that its chunks or the stored tensors do not
  hold is refused, and the caller's state is left as it was;
* a pickled value that torch's restricted unpickler refuses is not unpickled (nothing it names runs),
  nor one that asks for memory by naming ``bytearray``, unless the reader allows pickles; a refused
  load changes nothing in the caller's state;
* ``async_save`` of tied tensors beside an empty one saves every value; a failed one leaves no
  reservation open; a writer that has a staged save refuses to stage another.

Prints OK at the end; any failure raises."""

import faulthandler
import json
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import requests  # noqa: E402
import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402

import tenplex  # noqa: E402
import tenplex.dcp  # noqa: E402

faulthandler.dump_traceback_later(int(os.environ.get("TENPLEX_HANG_S", "300")), exit=True)
warnings.simplefilter("ignore")  # DCP warns that it runs without a process group
ADDR = os.environ["TENPLEX_ADDR"]
PID = os.getpid()
GOOD = {"format": "tenplex-dcp/1", "planner": None, "storage_meta": None,
        "storage": [{"fqn": "x", "offset": [0], "index": 0, "rank": 0, "key": "t0.numpy.ndarray"}],
        "entries": {"x": {"kind": "tensor", "dtype": "float32", "requires_grad": False,
                          "memory_format": "contiguous_format", "pin_memory": False, "size": [4],
                          "chunks": [{"offsets": [0], "sizes": [4]}]}}}


def refused(call, words):
    """``call()`` raises (DCP wraps a reader's error in a CheckpointException, a BaseException) naming ``words``."""
    try:
        call()
    except BaseException as e:  # noqa: BLE001
        assert words in str(e), (words, str(e)[-600:])
        return
    raise AssertionError("not refused: expected %r" % words)


def metadata():
    job, step = "dcp-meta-%d" % PID, [0]

    def forged(doc):
        step[0] += 1
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        tenplex.save({"t0": torch.full((4,), 9.0), tenplex.dcp.METADATA: body}, job=job, step=step[0], rank=0, world=1)

    def load_refused(doc, words, dtype=torch.float32):
        forged(doc)
        target = {"x": torch.zeros(4, dtype=dtype)}
        refused(lambda: dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job)), words)
        assert torch.equal(target["x"], torch.zeros(4, dtype=dtype)), target  # nothing changed

    forged(GOOD)
    target = {"x": torch.zeros(4)}
    dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job))
    assert torch.equal(target["x"], torch.full((4,), 9.0)), target  # the forged document is well-formed
    import pickle
    load_refused(pickle.dumps({"a": 1}), "malformed")
    load_refused(dict(GOOD, format="other"), "not a tenplex-dcp/1 document")

    def bad(change):
        doc = json.loads(json.dumps(GOOD))
        change(doc)
        return doc
    load_refused(bad(lambda d: d["entries"]["x"].update(dtype="_C")), "names dtype '_C'")
    load_refused(bad(lambda d: d["entries"]["x"].update(chunks=[{"offsets": [2], "sizes": [3]}])),
                 "lies outside its size")
    load_refused(bad(lambda d: d["entries"]["x"].update(size="4")), "bad size")
    load_refused(bad(lambda d: d["entries"]["x"].update(size=[2 ** 70])), "bad size")
    load_refused(bad(lambda d: d.update(planner={"x": [["builtins.eval", "x"]]})), "a key path holds")
    other = "dcp-other-%d" % PID
    tenplex.save({"secret": torch.full((4,), 42.0)}, job=other, step=1, rank=0, world=1)
    for key in ("../../../../%s/generations/1/0/secret.numpy.ndarray" % other, "/job/%s/x" % other, "a//b", "./t0"):
        load_refused(bad(lambda d: d["storage"][0].update(key=key)), "is not a path inside a rank's tree")
    load_refused(bad(lambda d: d["storage"][0].update(rank=3)), "in rank 3 of a generation of 1 ranks")
    load_refused(bad(lambda d: d["storage"][0].update(key="t9.numpy.ndarray")), "is not stored as a tensor")
    # what DCP would size by the metadata (an empty state's tensors) must be what is stored
    load_refused(bad(lambda d: d["entries"]["x"].update(size=[1 << 40])), "asks for 1099511627776")
    load_refused(bad(lambda d: d["entries"]["x"].update(size=[3], chunks=[{"offsets": [0], "sizes": [3]}])),
                 "stored as f32 [4]")
    load_refused(bad(lambda d: d["entries"]["x"].update(dtype="float64")), "stored as f32", torch.float64)


_MARKS = []


def _mark(path):
    open(path, "w").close()
    return "ran"


class Evil:
    """Pickles as a call of ``_mark``: what a hostile tree's bytes could make a trainer run."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_mark, (self.path,))


class Bomb:
    """Pickles as ``bytearray(n)``: a few bytes that ask for n bytes of memory when loaded."""

    def __reduce__(self):
        return (bytearray, (1 << 20,))


def pickles(tmp):
    job = "dcp-pickle-%d" % PID
    marker = os.path.join(tmp, "ran")
    dcp.save({"t": torch.arange(3.0), "obj": Evil(marker)}, storage_writer=tenplex.dcp.Writer(job=job, step=1))
    assert not os.path.exists(marker)
    target = {"t": torch.zeros(3), "obj": None}
    refused(lambda: dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job)), "restricted unpickler refuses")
    assert not os.path.exists(marker), "the pickle ran"
    assert torch.equal(target["t"], torch.zeros(3)) and target["obj"] is None, target  # a refused load changes nothing
    dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job, allow_pickle=True))
    assert os.path.exists(marker) and target["obj"] == "ran" and torch.equal(target["t"], torch.arange(3.0))

    dcp.save({"obj": Bomb()}, storage_writer=tenplex.dcp.Writer(job=job, step=2))
    target = {"obj": None}
    refused(lambda: dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job)), "names bytearray")
    assert target["obj"] is None
    dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job, allow_pickle=True))
    assert target["obj"] == bytearray(1 << 20)


def open_handouts(job):
    return requests.get(ADDR + "/api/v1/jobs/%s/shared" % job).json()["open"]


def staging():
    job = "dcp-stage-%d" % PID
    x, y = torch.ones(4), torch.full((4,), 2.0)
    state = {"a": x, "b": x, "c": y, "e": torch.empty(0), "z": torch.zeros(2, 0, 3)}
    writer = tenplex.dcp.Writer(job=job, step=1)
    pending = dcp.async_save(state, storage_writer=writer)
    x.fill_(5)  # training changes its tensors at once
    pending.result()
    target = {"a": torch.zeros(4), "b": torch.zeros(4), "c": torch.zeros(4), "e": torch.empty(0),
              "z": torch.zeros(2, 0, 3)}
    dcp.load(target, storage_reader=tenplex.dcp.Reader(job=job))
    assert torch.equal(target["a"], torch.ones(4)) and torch.equal(target["b"], torch.ones(4)), target
    assert torch.equal(target["c"], torch.full((4,), 2.0)) and target["z"].shape == (2, 0, 3), target
    assert open_handouts(job) == [], open_handouts(job)

    refused(lambda: dcp.async_save({"w": torch.ones(1000), "f": lambda: 1},
                                   storage_writer=tenplex.dcp.Writer(job=job, step=2)).result(), "")
    assert open_handouts(job) == [], open_handouts(job)  # the failed save's reservation is released

    if os.environ.get("TENPLEX_SHM") != "0":  # staged into shared memory: one staged save per writer
        twice = tenplex.dcp.Writer(job=job, step=3)
        twice.stage({"w": torch.ones(3)})
        refused(lambda: twice.stage({"w": torch.ones(3)}), "already staged a save")


def main():
    with tempfile.TemporaryDirectory(prefix="tenplex-dcp-hostile-") as tmp:
        metadata()
        pickles(tmp)
        staging()
    print("OK")


if __name__ == "__main__":
    main()
