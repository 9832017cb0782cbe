#!/usr/bin/python3
"""Replays the prototype client's request forms (wire protocol document: checkpoint layout and
client sections) against a running tenplexd and checks the answers byte for byte.

Usage: TENPLEX_ADDR=http://127.0.0.1:20010 /usr/bin/python3 tests/python/test_compat.py
Needs Debian's python3-numpy and python3-requests.
"""
import io
import os
import tarfile
import unittest

import numpy as np
import requests

ADDR = os.environ.get("TENPLEX_ADDR", "http://127.0.0.1:20010")
SHORT = {np.dtype(k): v for k, v in [("int8", "i8"), ("uint8", "u8"), ("int16", "i16"), ("uint16", "u16"),
                                      ("int32", "i32"), ("uint32", "u32"), ("int64", "i64"), ("uint64", "u64"),
                                      ("float16", "f16"), ("float32", "f32"), ("float64", "f64"), ("bool", "bool")]}
FROM_SHORT = {v: k for k, v in SHORT.items()}


def upload_tensor(path, a, name_style="numpy"):
    dtype = a.dtype.name if name_style == "numpy" else SHORT[a.dtype]
    r = requests.post(f"{ADDR}/upload", params={"path": path, "dtype": dtype, "dims": ",".join(map(str, a.shape))},
                      headers={"Content-Type": "x-tensor"}, data=a.tobytes())
    assert r.status_code == 200 and r.content == b"", (r.status_code, r.text)


def upload_value(path, body, content_type, replace=False):
    headers = {"Content-Type": content_type}
    if replace:
        headers["x-replace"] = "true"
    return requests.post(f"{ADDR}/upload", params={"path": path}, headers=headers, data=body)


def save(obj, prefix):
    """The reference client's layout of a state dict."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            save_leaf_or_tree(v, f"{prefix}/{k}")
    else:
        raise TypeError(obj)


def save_leaf_or_tree(v, path):
    if isinstance(v, dict):
        save(v, path)
    elif isinstance(v, (list, tuple)):
        assert upload_value(f"{path}/dir.meta", f"list\n{len(v)}".encode(), "text/plain").status_code == 200
        for i, x in enumerate(v):
            save_leaf_or_tree(x, f"{path}/{i}")
    elif isinstance(v, np.ndarray):
        upload_tensor(f"{path}.numpy.ndarray", v)
    elif v is None:
        assert upload_value(f"{path}.none", b"None", "none").status_code == 200
    else:
        kind = type(v).__name__
        assert upload_value(f"{path}.{kind}", str(v).encode(), kind).status_code == 200


def query_tensor(path, rng=None, content_type="x-tensor"):
    params = {"path": path}
    if rng is not None:
        params["range"] = rng
    headers = {"Content-Type": content_type} if content_type else {}
    r = requests.get(f"{ADDR}/query", params=params, headers=headers)
    assert r.status_code == 200, (r.status_code, r.text)
    dims = r.headers["x-tensor-dims"]
    shape = tuple(int(d) for d in dims.split(",")) if dims else ()
    return np.frombuffer(r.content, dtype=FROM_SHORT[r.headers["x-tensor-dtype"]]).reshape(shape), r


def load(prefix):
    """The reference client's load: list every file, skip sidecars, rebuild the tree."""
    r = requests.get(f"{ADDR}/query", params={"path": prefix}, headers={"Content-Type": "x-dir"})
    assert r.status_code == 200 and r.headers["dtype"] == "txt"
    out = {}
    for full in r.text.split("\n"):
        rel = full[len(prefix) + 1:]
        parts = rel.split("/")
        name = parts[-1]
        if name.endswith(".meta"):
            continue
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        if name.endswith(".numpy.ndarray"):
            node[name[:-len(".numpy.ndarray")]], _ = query_tensor(full)
        else:
            base = name.split(".")[0]
            q = requests.get(f"{ADDR}/query", params={"path": full.rsplit("/", 1)[0] + "/" + base},
                             headers={"Content-Type": "text"})
            assert q.status_code == 200, (full, q.status_code, q.text)
            dtype = q.headers["dtype"]
            assert dtype == name[len(base) + 1:], (dtype, name)
            text = q.content.decode()
            node[base] = {"int": int, "float": float, "str": str, "none": lambda _: None,
                          "bool": lambda s: s == "True"}[dtype](text)
    return out


class CompatReplay(unittest.TestCase):
    job = "/job/compat"

    def setUp(self):
        requests.delete(f"{ADDR}/delete", params={"path": self.job})

    def tearDown(self):
        requests.delete(f"{ADDR}/delete", params={"path": self.job})

    def test_checkpoint_save_load_round_trip(self):
        rng = np.random.default_rng(0)
        state = {
            "model": {"w": rng.standard_normal((3, 4)).astype(np.float32),
                      "b": np.arange(5, dtype=np.int64),
                      "h": np.ones((2, 2), dtype=np.float16),
                      "mask": np.array([True, False, True])},
            "step": 7, "lr": 0.5, "name": "gpt", "opt": None, "flag": False,
            "hist": [np.zeros(2, dtype=np.uint8), 3],
        }
        save(state, f"{self.job}/save/0")
        r = upload_value(f"{self.job}/iter", b"7", "text/plain", replace=True)
        self.assertEqual((200, b""), (r.status_code, r.content))
        r = upload_value(f"{self.job}/iter", b"8", "text/plain", replace=True)
        self.assertEqual(200, r.status_code)
        back = load(f"{self.job}/save/0")
        for k in ("w", "b", "h", "mask"):
            self.assertEqual(state["model"][k].dtype, back["model"][k].dtype)
            self.assertEqual(state["model"][k].tobytes(), back["model"][k].tobytes())
        self.assertEqual((7, 0.5, "gpt", None, False), (back["step"], back["lr"], back["name"], back["opt"], back["flag"]))
        self.assertEqual(b"\x00\x00", back["hist"]["0"].tobytes())
        self.assertEqual(3, back["hist"]["1"])
        it = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/iter"}, headers={"Content-Type": "text"})
        self.assertEqual((b"8", "text"), (it.content, it.headers["dtype"]))
        meta = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/save/0/hist/dir"})
        self.assertEqual((b"list\n2", "meta"), (meta.content, meta.headers["dtype"]))

    def test_listing_is_absolute_in_creation_order_with_sidecars_first(self):
        upload_tensor(f"{self.job}/save/0/w.numpy.ndarray", np.zeros((2, 3), np.float32))
        upload_value(f"{self.job}/save/0/step.int", b"1", "int")
        r = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/save"}, headers={"Content-Type": "x-dir"})
        self.assertEqual(f"{self.job}/save/0/w.numpy.ndarray.meta\n{self.job}/save/0/w.numpy.ndarray\n"
                         f"{self.job}/save/0/step.int".encode(), r.content)
        one = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/save/0/step.int"},
                           headers={"Content-Type": "x-dir"})
        self.assertEqual(f"{self.job}/save/0/step.int".encode(), one.content)
        side = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/save/0/w"})
        self.assertEqual((b"f32\n2\n2\n3\n", "numpy.ndarray.meta"), (side.content, side.headers["dtype"]))
        missing = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/nope"}, headers={"Content-Type": "x-dir"})
        self.assertEqual(404, missing.status_code)

    def test_range_forms_and_short_names(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        upload_tensor(f"{self.job}/t.numpy.ndarray", a, name_style="short")
        sub, r = query_tensor(f"{self.job}/t.numpy.ndarray", "1:3,1:3")
        self.assertEqual(("f32", "2,2"), (r.headers["x-tensor-dtype"], r.headers["x-tensor-dims"]))
        self.assertEqual(a[1:3, 1:3].tobytes(), r.content)
        _, r = query_tensor(f"{self.job}/t.numpy.ndarray", ":,2:")
        self.assertEqual((a[:, 2:].tobytes(), "3,2"), (r.content, r.headers["x-tensor-dims"]))
        # the prototype's own slice reader sends no Content-Type
        _, r = query_tensor(f"{self.job}/t.numpy.ndarray", "2:", content_type=None)
        self.assertEqual(a[2:].tobytes(), r.content)
        _, r = query_tensor(f"{self.job}/t.numpy.ndarray", "-1:")
        self.assertEqual(a[-1:].tobytes(), r.content)
        bad = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/t.numpy.ndarray", "range": "0:5"},
                           headers={"Content-Type": "x-tensor"})
        self.assertEqual(400, bad.status_code)
        self.assertIn("out of bounds for dim 0 of size 3", bad.text)

    def test_scalar_tensor_has_empty_dims(self):
        upload_tensor(f"{self.job}/s.numpy.ndarray", np.array(3.5, dtype=np.float64))
        v, r = query_tensor(f"{self.job}/s.numpy.ndarray")
        self.assertEqual("", r.headers["x-tensor-dims"])
        self.assertEqual(3.5, float(v))
        side = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/s.numpy.ndarray.meta"},
                            headers={"Content-Type": "text"})
        self.assertEqual(b"f64\n0\n", requests.get(f"{ADDR}/api/v1/files{self.job}/s.numpy.ndarray.meta").content)
        self.assertEqual(200, side.status_code)

    def test_file_without_replace_conflicts_and_keeps_old(self):
        self.assertEqual(200, upload_value(f"{self.job}/f.str", b"one", "str").status_code)
        r = upload_value(f"{self.job}/f.str", b"two", "str")
        self.assertEqual(409, r.status_code)
        q = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/f"})
        self.assertEqual((b"one", "str"), (q.content, q.headers["dtype"]))
        t = upload_tensor(f"{self.job}/x.numpy.ndarray", np.zeros(1, np.int8))
        r = requests.post(f"{ADDR}/upload", params={"path": f"{self.job}/x.numpy.ndarray", "dtype": "i8", "dims": "1"},
                          headers={"Content-Type": "x-tensor"}, data=b"\x01")
        self.assertEqual(409, r.status_code)
        self.assertIsNone(t)

    def test_tar_upload_and_delete_forms(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for name, data in [("a/b.txt", b"hello"), ("c.int", b"5")]:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        r = requests.post(f"{ADDR}/upload", params={"prefix": self.job}, headers={"Content-Type": "application/x-tar"},
                          data=buf.getvalue())
        self.assertEqual((200, b""), (r.status_code, r.content))
        q = requests.get(f"{ADDR}/query", params={"path": f"{self.job}/a/b"})
        self.assertEqual((b"hello", "txt"), (q.content, q.headers["dtype"]))
        r = requests.post(f"{ADDR}/upload1", params={"path": f"{self.job}/d/e.float"}, headers={"Content-Type": "float"},
                          data=b"1.5")
        self.assertEqual(200, r.status_code)
        self.assertEqual(405, requests.get(f"{ADDR}/delete", params={"path": self.job}).status_code)
        d = requests.delete(f"{ADDR}/delete1", params={"path": f"{self.job}/d"})
        self.assertEqual((200, b"1 1\n"), (d.status_code, d.content))
        d = requests.delete(f"{ADDR}/delete", params={"path": self.job})
        self.assertEqual((200, b"2 2\n"), (d.status_code, d.content))
        d = requests.delete(f"{ADDR}/delete", params={"path": self.job})
        self.assertEqual((417, b"node not exist"), (d.status_code, d.content))

    def test_npy_view_for_numpy_load(self):
        a = np.arange(20, dtype=np.int16).reshape(4, 5)
        upload_tensor(f"{self.job}/n.numpy.ndarray", a)
        r = requests.get(f"{ADDR}/api/v1/tensors{self.job}/n.numpy.ndarray", params={"range": "1:3,:"},
                         headers={"Accept": "application/x-npy"})
        self.assertEqual(200, r.status_code, r.text)
        back = np.load(io.BytesIO(r.content))
        self.assertTrue(np.array_equal(a[1:3], back))
        up = io.BytesIO()
        np.save(up, np.eye(3, dtype=np.float32))
        p = requests.put(f"{ADDR}/api/v1/tensors{self.job}/eye", data=up.getvalue(),
                         headers={"Content-Type": "application/x-npy"})
        self.assertEqual(201, p.status_code, p.text)
        v, _ = query_tensor(f"{self.job}/eye")
        self.assertTrue(np.array_equal(np.eye(3, dtype=np.float32), v))


if __name__ == "__main__":
    unittest.main(verbosity=2)
