"""The Python client's pure parts without a daemon: the job layout's paths and routes, the tree
codec (a state <-> flat entries in the prototype's layout, and back from a listing), and the HTTP
client's error mapping. Prints OK at the end; any failure raises."""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import numpy as np  # noqa: E402

from tenplex.wire import tree_codec, http_client, routes  # noqa: E402
from tenplex.errors import TenplexError  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def raises(kind, fn, *args):
    try:
        fn(*args)
    except kind as e:
        return str(e)
    raise AssertionError("%s%r did not raise %s" % (fn.__name__, args, kind.__name__))


# ---- the job layout: store paths and routes
assert routes.save_dir("j", 3) == "/job/j/save/3"
assert routes.load_dir("j", 0) == "/job/j/load/0"
assert routes.iter_file("j") == "/job/j/iter"
assert routes.model_file("j") == "/job/j/model.json"
assert routes.generation_dir("j", 7) == "/job/j/generations/7"
assert routes.assignment_file("j") == "/job/j/kubernetes/assignment.json"
assert routes.dataset_rank_dir("j", 2) == "/job/j/dataset/rank-2"
assert routes.dataset_head_file("j") == "/job/j/head.txt"
assert routes.under("/mnt/", routes.dataset_dir("j")) == os.path.join("/mnt", "job", "j", "dataset")
assert routes.tensors_route("/job/a b/w.numpy.ndarray") == "/api/v1/tensors/job/a%20b/w.numpy.ndarray"
assert routes.files_route("/job/j/iter") == "/api/v1/files/job/j/iter"
assert routes.dirs_route("/job/j/save/0") == "/api/v1/dirs/job/j/save/0"
assert routes.stop_route("a b") == "/api/v1/jobs/a%20b/stop"
assert routes.seal_route("j", 5, 2) == "/api/v1/jobs/j/saves/5/ranks/2"
assert routes.generations_route("j") == "/api/v1/jobs/j/generations"

# ---- state -> entries, in the prototype's layout and a deterministic order
ns = argparse.Namespace(lr=0.5)
w = np.arange(6, dtype=np.float32).reshape(2, 3)
state = {"model": {"w": w}, "v": {"no": False, "n": 12, "x": 0.1, "s": "héllo", "none": None, "raw": b"\x00", "ns": ns},
         "l": [1, (2.5,)], "e": {}, "el": []}
entries = tree_codec.flatten(state)
assert [(p, k) for p, k, _ in entries] == [
    ("model/dir.meta", "file"), ("model/w.numpy.ndarray", "tensor"), ("v/no.bool", "file"), ("v/n.int", "file"), ("v/x.float", "file"),
    ("v/s.str", "file"), ("v/none.none", "file"), ("v/raw.bytes", "file"), ("v/ns.argparse.Namespace", "file"),
    ("l/dir.meta", "file"), ("l/0.int", "file"), ("l/1/dir.meta", "file"), ("l/1/0.float", "file"),
    ("e/dir.meta", "file"), ("el/dir.meta", "file")], entries
payloads = {p: v for p, _, v in entries}
assert payloads["model/w.numpy.ndarray"] is w
assert payloads["model/dir.meta"] == b'dict\n1\ntypes\n{"w":{"t":"ndarray"}}'  # a numpy array comes back as one
assert [payloads[p] for p in ("v/no.bool", "v/n.int", "v/x.float", "v/s.str", "v/none.none", "v/raw.bytes")] == \
    [b"False", b"12", b"0.1", "héllo".encode(), b"None", b"\x00"]
assert (payloads["l/dir.meta"], payloads["l/1/dir.meta"]) == (b"list\n2", b"tuple\n1")
assert (payloads["e/dir.meta"], payloads["el/dir.meta"]) == (b"dict\n0", b"list\n0")
assert tree_codec.flatten({}) == [("dir.meta", "file", b"dict\n0")]
assert tree_codec.flatten({1: 2}) == [("dir.meta", "file", b"dict\n1\nint-keys\n1"), ("1.int", "file", b"2")]
assert "cannot be a name" in raises(ValueError, tree_codec.flatten, {"a/b": 1})
assert "cannot be a name" in raises(ValueError, tree_codec.flatten, {"..": 1})
assert "cannot save a object at 'bad'" in raises(TypeError, tree_codec.flatten, {"bad": object()})

# ---- tensor bodies: bytes in C order, the daemon's dtype names and dims
a, short, shape = tree_codec.as_array(np.arange(12, dtype=np.int16).reshape(3, 4).T)  # not contiguous: copied
assert (short, shape, a.flags.c_contiguous) == ("i16", (4, 3), True)
assert bytes(tree_codec.byte_view(a)) == np.ascontiguousarray(np.arange(12, dtype=np.int16).reshape(3, 4).T).tobytes()
a, short, shape = tree_codec.as_array(np.float64(2.5))
assert (short, shape, tree_codec.dims(shape), tree_codec.dims((3, 4))) == ("f64", (), "", "3,4")
assert len(tree_codec.byte_view(np.zeros((0, 3)))) == 0
assert tree_codec.as_array(np.zeros(2, np.complex64))[1:] == ("c64", (2,))
assert tree_codec.as_array(np.zeros(2, np.complex128))[1:] == ("c128", (2,))
assert "cannot be stored" in raises(TypeError, tree_codec.as_array, np.zeros(2, np.float128))
assert tree_codec.numpy_dtype("bf16") == np.uint16 and tree_codec.numpy_dtype("bool") == np.bool_
assert tree_codec.numpy_dtype("c128") == np.complex128
assert "unknown dtype 'c256'" in raises(TenplexError, tree_codec.numpy_dtype, "c256")
if torch is not None:
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    a, short, shape = tree_codec.as_array(t)
    assert (short, shape, a.dtype) == ("bf16", (2,), np.uint16)
    back = tree_codec.torch_values.from_numpy(a.copy(), "bf16")
    assert back.dtype == torch.bfloat16 and torch.equal(back.view(torch.int16), t.view(torch.int16))

# ---- entries -> state: a listing as the daemon gives it, reads in listing order
prefix = "/job/j/save/0"
store = {}
listing = []
for rel, kind, payload in entries + [("other.txt", "file", b"raw bytes")]:
    path = prefix + "/" + rel
    if kind == "tensor":
        arr, short, shape = tree_codec.as_array(payload)
        listing.append({"path": path, "type": "tensor", "dtype": short, "shape": list(shape)})
        store[path] = arr
    else:
        listing.append({"path": path, "type": "file"})
        store[path] = payload
reads = []


def read_file(path):
    reads.append(path)
    return store[path]


def read_tensor(e):
    reads.append(e["path"])
    return store[e["path"]].astype(tree_codec.numpy_dtype(e["dtype"])).reshape(e["shape"])


back = tree_codec.unflatten(listing, prefix + "/", read_file, read_tensor)
assert reads == [e["path"] for e in listing], reads
assert np.array_equal(back["model"]["w"], w) and back["model"]["w"].dtype == np.float32
assert {k: v for k, v in back.items() if k not in ("model", "other.txt")} == \
    {k: v for k, v in state.items() if k != "model"}, back
assert back["v"]["no"] is False and isinstance(back["l"][1], tuple) and back["el"] == [] and back["e"] == {}
assert back["v"]["ns"] == ns and back["other.txt"] == b"raw bytes"
assert tree_codec.decode_value(".bool", b"True") is True
assert "not True or False" in raises(TenplexError, tree_codec.decode_value, ".bool", b"yes")
gap = [{"path": "/p/dir.meta", "type": "file"}, {"path": "/p/0.int", "type": "file"}, {"path": "/p/2.int", "type": "file"}]
files = {"/p/dir.meta": b"list\n2", "/p/0.int": b"0", "/p/2.int": b"2"}
raises((TenplexError, KeyError), tree_codec.unflatten, gap, "/p", files.get, None)  # not a list: refused

# ---- dict keys keep their types: int keys are listed in the dict's dir.meta; what cannot round-trip is refused
keyed = {"state": {0: {"step": 3}, 10: {"m": np.arange(2.0)}}, "mixed": {-1: "a", "b": 2}, "plain": {"x": 1}}
flat = tree_codec.flatten(keyed)
files = {"/k/" + p: d for p, kind, d in flat if kind == "file"}
assert files["/k/state/dir.meta"] == b"dict\n2\nint-keys\n0\n10", files
assert files["/k/mixed/dir.meta"] == b"dict\n2\nint-keys\n-1" and "/k/plain/dir.meta" not in files
tensors = {"/k/" + p: d for p, kind, d in flat if kind == "tensor"}
listing = [{"path": "/k/" + p, "type": kind} for p, kind, d in flat]
back = tree_codec.unflatten(listing, "/k", files.get, lambda e: tensors[e["path"]])
assert list(back["state"]) == [0, 10] and back["state"][0] == {"step": 3} and back["mixed"] == {-1: "a", "b": 2}
assert np.array_equal(back["state"][10]["m"], np.arange(2.0)) and back["plain"] == {"x": 1}
old_save = [{"path": "/o/dir.meta", "type": "file"}, {"path": "/o/1.int", "type": "file"}]
assert tree_codec.unflatten(old_save, "/o", {"/o/dir.meta": b"dict\n1", "/o/1.int": b"7"}.get, None) == {"1": 7}
assert tree_codec.unflatten(old_save[1:], "/o", {"/o/1.int": b"7"}.get, None) == {"1": 7}  # no meta: str keys
for bad_meta in (b"dict\n1\nint-keys\n01", b"dict\n1\nint-keys\nx", b"dict\n1\nint-keys\n2"):
    raises(TenplexError, tree_codec.unflatten, old_save, "/o", {"/o/dir.meta": bad_meta, "/o/1.int": b"7"}.get, None)
assert "(1, 2) (a tuple) at 's'" in raises(TenplexError, tree_codec.flatten, {"s": {(1, 2): 0}})
assert "0.5 (a float) at 's/x'" in raises(TenplexError, tree_codec.flatten, {"s": {"x": {0.5: 0}}})
assert "True (a bool)" in raises(TenplexError, tree_codec.flatten, {True: 0})
assert "'1' collides with key 1" in raises(TenplexError, tree_codec.flatten, {1: np.zeros(1), "1": "one"})
assert "'a.str' collides with key 'a'" in raises(TenplexError, tree_codec.flatten, {"a": "s", "a.str": {"b": 1}})
assert "collides with the dict's dir.meta" in raises(TenplexError, tree_codec.flatten, {0: 1, "dir.meta": {"b": 1}})
assert isinstance(tree_codec.flatten({"x": {1: 0}}), list) and tree_codec.flatten({"dir.meta": {"b": 1}})  # no int key: no meta

# ---- types beside the tree: each value in its plain form (what other readers read), its type in the
# dir.meta of its directory after a line "types" (JSON, child name to tag; "" is the directory itself)
import collections  # noqa: E402
import pathlib  # noqa: E402
typed = {"od": collections.OrderedDict(b=1), "cfg": {"p": pathlib.Path("/x"), 3: np.float32(2.0)}}
flat = tree_codec.flatten(typed)
files = {p: d for p, kind, d in flat if kind == "file"}
assert files["od/dir.meta"] == b'dict\n1\ntypes\n{"":{"order":["b"],"t":"OrderedDict"}}', files
assert files["cfg/dir.meta"] == b'dict\n2\nint-keys\n3\ntypes\n{"3":{"t":"np.scalar"},"p":{"cls":"PosixPath","t":"path"}}', files
assert files["cfg/p.str"] == b"/x" and files["od/b.int"] == b"1" and "dir.meta" not in files
listing = [{"path": "/t/" + p, "type": kind} for p, kind, d in flat]
tensors = {"/t/" + p: np.asarray(d) for p, kind, d in flat if kind == "tensor"}
back = tree_codec.unflatten(listing, "/t", lambda p: files[p[3:]], lambda e: tensors[e["path"]])
assert type(back["od"]) is collections.OrderedDict and back["cfg"]["p"] == pathlib.Path("/x"), back
assert type(back["cfg"][3]) is np.float32 and back["cfg"][3] == 2.0, back
unknown = [{"path": "/u/dir.meta", "type": "file"}, {"path": "/u/a.int", "type": "file"}]
ufiles = {"/u/dir.meta": b'dict\n1\ntypes\n{"a":{"t":"from-the-future"}}', "/u/a.int": b"1"}
assert "a type this client does not know" in raises(TenplexError, tree_codec.unflatten, unknown, "/u", ufiles.get, None)
ufiles["/u/dir.meta"] = b"dict\n1\ntypes\nnot json"
assert "not JSON" in raises(TenplexError, tree_codec.unflatten, unknown, "/u", ufiles.get, None)
assert "allow_pickle=True" in raises(TypeError, tree_codec.flatten, {"f": {"g": len}})
pick = tree_codec.flatten({"f": {"g": len}}, allow_pickle=True)
assert [(p, k) for p, k, _ in pick] == [("f/dir.meta", "file"), ("f/g.bytes", "file")], pick
pfiles = {"/f/" + p: d for p, k, d in pick}
plist = [{"path": "/f/" + p, "type": k} for p, k, _ in pick]
assert "'f/g' holds a pickle" in raises(TenplexError, tree_codec.unflatten, plist, "/f", pfiles.get, None)
assert tree_codec.unflatten(plist, "/f", pfiles.get, None, allow_pickle=True) == {"f": {"g": len}}
assert "cannot save the str at 's/bad': it is not valid text" in raises(ValueError, tree_codec.flatten,
                                                                         {"s": {"bad": "\udc80"}})
mv = tree_codec.flatten({"m": {"v": memoryview(b"ab")}})
mfiles = {"/m/" + p: d for p, k, d in mv}
mback = tree_codec.unflatten([{"path": "/m/" + p, "type": k} for p, k, _ in mv], "/m", mfiles.get, None)
assert type(mback["m"]["v"]) is memoryview and bytes(mback["m"]["v"]) == b"ab", mback

# ---- the HTTP client's pure parts: base URL and error mapping


class Answer:
    def __init__(self, status, text, headers):
        self.status_code, self.text, self.headers = status, text, headers

    def json(self):
        import json
        return json.loads(self.text)


assert http_client.base_url("127.0.0.1:9/") == "http://127.0.0.1:9"
assert http_client.base_url("https://h:1") == "https://h:1"
e = http_client.error_of("GET", "/api/v1/files/x", Answer(404, "no such file /x\n", {"X-Tenplex-Error-Code": "not_found"}))
assert (str(e), e.status, e.reason, e.code) == ("GET /api/v1/files/x: 404 no such file /x", 404, "no such file /x",
                                                "not_found"), (str(e), e.code)
assert http_client.error_of("GET", "/x", Answer(500, "boom", {})).code is None
j = http_client.error_of("GET", "/api/v1/files/t", Answer(404, '{"error":"/t is a tensor","code":"wrong_type"}', {
    "Content-Type": "application/json", "X-Tenplex-Error-Code": "wrong_type"}))
assert (j.reason, j.code) == ("/t is a tensor", "wrong_type"), (j.reason, j.code)  # the reason, not the JSON body

# ---- a DTensor's recorded layout: the box each mesh coordinate holds, as DTensor cuts it (torch.chunk
# pieces along each sharded dim, mesh dimension after mesh dimension; an empty piece past the end)
from tenplex.wire import dtensor_layout as dl  # noqa: E402
assert [dl.box([7, 5], [4], ["S0"], [c]) for c in range(4)] == [
    ([0, 0], [2, 5]), ([2, 0], [2, 5]), ([4, 0], [2, 5]), ([6, 0], [1, 5])]
assert [dl.box([5], [4], ["S0"], [c])[1] for c in range(4)] == [[2], [2], [1], [0]]  # 5 = 2+2+1+0
assert dl.box([9], [4], ["S0"], [3]) == ([9], [0])  # 9 = 3+3+3+0: the last piece is empty, at the end
assert dl.box([5, 3], [2, 2], ["S0", "S0"], [1, 1]) == ([4, 0], [1, 3])  # 5 -> 3+2, then 2 -> 1+1
assert dl.box([7, 5], [2, 2], ["S0", "S1"], [1, 0]) == ([4, 0], [3, 3])
assert dl.box([3, 9], [2, 2], ["R", "S0"], [1, 1]) == ([2, 0], [1, 9])
assert dl.coordinates([2, 3])[4] == [1, 1] and dl.index([1, 1], [2, 3]) == 4
good = {"shape": [7, 5], "mesh": [2, 2], "placements": ["S0", "R"], "coord": [1, 0]}
assert dl.checked(good, 4, "w")["ranks"] == [0, 1, 2, 3]
for bad in ({"mesh": [1 << 21]}, {"mesh": [1 << 11, 1 << 11]}, {"placements": ["S2", "R"]}, {"coord": [2, 0]},
            {"ranks": [0, 1, 2, 4]}, {"ranks": [0, 1]}, {"ranks": [0, 1, 1, 2]}, {"placements": ["S01", "R"]},
            {"shape": [-1, 5]}, {"shape": [True, 5]}, {"mesh": [0, 2]}):
    raises(TenplexError, dl.checked, dict(good, **bad), 4, "w")
print("OK")
