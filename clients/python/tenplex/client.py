"""Saving, loading and the stop check against a tenplex daemon, over its REST API.

The saved tree is the prototype's checkpoint layout (docs/CLIENTS.md), so checkpoints written by
the prototype's client and by this one are interchangeable:

* dict keys become directories; lists and tuples become directories with ``dir.meta``
  (``list\\n<len>`` or ``tuple\\n<len>``) and children ``0``, ``1``, ...; an empty dict is a
  directory holding ``dir.meta`` = ``dict\\n0``;
* tensors and arrays become ``<key>.numpy.ndarray`` (every dtype of the daemon, ``bool`` and
  ``bf16`` included, scalars as 0-d tensors);
* ``None`` -> ``<key>.none``; ``str``/``int``/``float``/``bool`` -> ``<key>.str|.int|.float|.bool``
  holding ``str(value)`` (``repr`` for floats, so they come back exactly); ``bytes`` ->
  ``<key>.bytes``; ``argparse.Namespace`` -> ``<key>.argparse.Namespace`` (a pickle).

Configuration comes from arguments or the environment: ``TENPLEX_ADDR`` (default
``http://127.0.0.1:20010``; ``https://...`` for a daemon with TLS), ``TENPLEX_JOB``, the token from
``TENPLEX_TOKEN_FILE`` (a file holding it) or ``TENPLEX_TOKEN``, ``TENPLEX_CA`` (a PEM file of the CA
certificates to trust for https; default: the system's), ``TENPLEX_CHECKSUMS`` (``1``: ask for and
send a CRC32C on every read and upload, see :class:`Client`), and from a launcher ``RANK``,
``WORLD_SIZE``, ``TENPLEX_CONFIG`` (the parallel configuration as JSON) and ``TENPLEX_DAEMONS``
(worker number to daemon address, for clusters whose daemons do not know each other).
"""

import argparse
import json
import os
import pickle
from urllib.parse import quote

import numpy as np
import requests

from . import checksum

try:
    import torch
except ImportError:  # torch is optional
    torch = None

TENSOR = ".numpy.ndarray"
_VALUE_SUFFIXES = (".argparse.Namespace", ".none", ".str", ".int", ".float", ".bool", ".bytes")
_NUMPY_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
    "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.uint16,
}
_SHORT = {np.dtype(v): k for k, v in _NUMPY_DTYPES.items() if k != "bf16"}


class TenplexError(Exception):
    """A request the daemon refused or could not serve; ``status`` and ``reason`` are the daemon's."""

    def __init__(self, message, status=None, reason=None):
        super().__init__(message)
        self.status = status
        self.reason = reason


class NoCheckpoint(TenplexError, LookupError):
    """There is nothing to load for this job and rank (a first start)."""


def _env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else default


def _env_token():
    """The token from ``TENPLEX_TOKEN_FILE`` (the file's content, stripped) or else ``TENPLEX_TOKEN``."""
    path = os.environ.get("TENPLEX_TOKEN_FILE")
    if not path:
        return os.environ.get("TENPLEX_TOKEN")
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise TenplexError("cannot read token file %s (%s)" % (path, type(e).__name__)) from None
    if not token:
        raise TenplexError("token file %s is empty" % path)
    return token


class Client:
    """A connection to one daemon (keep-alive). ``addr``, ``token`` and ``ca`` default to the environment.

    ``ca`` is a PEM file of CA certificates to trust for an ``https://`` address (``TENPLEX_CA``);
    without it the system's trusted CAs apply.

    Every body the daemon sends with ``x-tensor-crc32c`` is verified (a mismatch raises
    :class:`TenplexError`; without a native CRC32C implementation, see :mod:`tenplex.checksum`, only
    bodies up to 1 MiB are). With ``checksums=True`` (default: ``TENPLEX_CHECKSUMS=1``) every read
    also asks for one (``x-want-crc32c``) and fails when it does not come, and every upload carries
    the body's CRC32C, which the daemon verifies before it stores anything."""

    def __init__(self, addr=None, token=None, timeout=300, ca=None, checksums=None):
        self.addr = (addr or os.environ.get("TENPLEX_ADDR") or "http://127.0.0.1:20010").rstrip("/")
        if "://" not in self.addr:
            self.addr = "http://" + self.addr
        self.token = token if token is not None else _env_token()
        self.timeout = timeout
        if checksums is None:
            checksums = os.environ.get("TENPLEX_CHECKSUMS", "").lower() in ("1", "true", "yes")
        self.checksums = bool(checksums)
        self.session = requests.Session()
        # given with every request: a session-wide verify would lose to REQUESTS_CA_BUNDLE in the environment
        self.ca = ca or os.environ.get("TENPLEX_CA") or None
        if self.token:
            self.session.headers["Authorization"] = "Bearer " + self.token

    def request(self, method, path, ok=(200,), **kw):
        url = self.addr + path
        try:
            if self.ca:
                kw.setdefault("verify", self.ca)
            r = self.session.request(method, url, timeout=self.timeout, **kw)
        except requests.ConnectionError as e:
            raise TenplexError("cannot reach the tenplex daemon at %s (%s)" % (self.addr, e)) from None
        if r.status_code not in ok:
            reason = r.text.strip()
            raise TenplexError("%s %s: %d %s" % (method, path, r.status_code, reason), r.status_code, reason)
        return r

    def close(self):
        self.session.close()

    def read_headers(self):
        """Headers for a read: asks for the body's checksum when :attr:`checksums` is on."""
        return {checksum.WANT_HEADER: "1"} if self.checksums else {}

    def upload_headers(self, body):
        """Headers for an upload of ``body``: its checksum when :attr:`checksums` is on."""
        return {checksum.HEADER: checksum.hex8(checksum.crc32c(body))} if self.checksums else {}

    def verify(self, path, response, body):
        """Checks ``body`` against the checksum the daemon sent with ``response``."""
        sent = response.headers.get(checksum.HEADER)
        if sent is None:
            if self.checksums:
                raise TenplexError("%s: the daemon sent no %s although it was asked for" % (path, checksum.HEADER))
            return
        want = checksum.parse(sent)
        if want is None:
            raise TenplexError("%s: malformed %s %r" % (path, checksum.HEADER, sent))
        if not checksum.FAST and not self.checksums and len(body) > _SLOW_VERIFY_LIMIT:
            _warn_slow()
            return
        got = checksum.crc32c(body)
        if got != want:
            raise TenplexError("%s: checksum mismatch: the daemon sent %s, the %d bytes received have %s"
                               % (path, checksum.hex8(want), len(body), checksum.hex8(got)))


_SLOW_VERIFY_LIMIT = 1 << 20
_warned = []


def _warn_slow():
    if not _warned:
        _warned.append(True)
        import warnings
        warnings.warn("no native CRC32C implementation (install python3-crcmod or the crc32c package): bodies over "
                      "1 MiB are not verified")


_default = {}


def _client(client, addr=None, token=None):
    if client is not None:
        return client
    key = (addr, token)
    if key not in _default:
        _default[key] = Client(addr, token)
    return _default[key]


def _job(job):
    job = job or os.environ.get("TENPLEX_JOB")
    if not job:
        raise ValueError("no job: pass job= or set TENPLEX_JOB")
    return job


def _p(path):
    return quote(path, safe="/")


def _name(key):
    k = str(key)
    if k in ("", ".", "..") or "/" in k or "\0" in k:
        raise ValueError("key %r cannot be a name in the store (empty, '.', '..', or contains '/')" % (key,))
    return k


# ---------------------------------------------------------------- encoding

def _as_array(x):
    """A tensor or array as (contiguous numpy array of its bytes, dtype short name, shape)."""
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), "bf16", tuple(t.shape)
        a = t.numpy()
        return a, _short(a.dtype), tuple(t.shape)
    a = np.asarray(x)  # keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d)
    if not a.flags.c_contiguous:
        a = a.copy(order="C")
    return a, _short(a.dtype), a.shape


def _short(dtype):
    s = _SHORT.get(np.dtype(dtype))
    if s is None:
        raise TypeError("dtype %s cannot be stored (supported: %s)" % (dtype, ", ".join(_NUMPY_DTYPES)))
    return s


def _is_tensor(x):
    return isinstance(x, (np.ndarray, np.generic)) or (torch is not None and isinstance(x, torch.Tensor))


def _entries(obj, path, out):
    """Flattens a state into (relative path, kind, payload) entries in a deterministic order."""
    if isinstance(obj, dict):
        if not obj:
            out.append((path + "/dir.meta", "file", b"dict\n0"))
        for k, v in obj.items():
            _entries(v, (path + "/" if path else "") + _name(k), out)
    elif isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        out.append(((path + "/" if path else "") + "dir.meta", "file", ("%s\n%d" % (kind, len(obj))).encode()))
        for i, v in enumerate(obj):
            _entries(v, (path + "/" if path else "") + str(i), out)
    elif _is_tensor(obj):
        out.append((path + TENSOR, "tensor", obj))
    elif obj is None:
        out.append((path + ".none", "file", b"None"))
    elif isinstance(obj, bool):
        out.append((path + ".bool", "file", str(obj).encode()))
    elif isinstance(obj, int):
        out.append((path + ".int", "file", str(obj).encode()))
    elif isinstance(obj, float):
        out.append((path + ".float", "file", repr(obj).encode()))
    elif isinstance(obj, str):
        out.append((path + ".str", "file", obj.encode("utf-8")))
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        out.append((path + ".bytes", "file", bytes(obj)))
    elif isinstance(obj, argparse.Namespace):
        out.append((path + ".argparse.Namespace", "file", pickle.dumps(obj)))
    else:
        raise TypeError("cannot save a %s at %r (tensors, arrays, dict, list, tuple, str, int, float, bool, "
                        "bytes, None and argparse.Namespace can be saved)" % (type(obj).__name__, path))


def upload(state, prefix, client=None, replace=True):
    """Writes a state's tree below the store path ``prefix`` (one request per leaf, bodies sent
    from the tensors' own memory). Returns the number of bytes sent."""
    c = _client(client)
    if not state and isinstance(state, dict):
        entries = [("dir.meta", "file", b"dict\n0")]
    else:
        entries = []
        _entries(state, "", entries)
    sent = 0
    rep = "true" if replace else "false"
    for rel, kind, payload in entries:
        path = prefix.rstrip("/") + "/" + rel
        if kind == "tensor":
            a, dtype, shape = _as_array(payload)
            body = memoryview(a.reshape(-1)).cast("B") if a.size else b""
            c.request("PUT", "/api/v1/tensors" + _p(path), ok=(200, 201),
                      params={"dtype": dtype, "dims": ",".join(str(d) for d in shape), "replace": rep},
                      data=_Body(body), headers=dict(c.upload_headers(body), **{"Content-Type": "application/octet-stream"}))
            sent += a.nbytes
        else:
            c.request("PUT", "/api/v1/files" + _p(path), ok=(200, 201), params={"replace": rep}, data=payload,
                      headers=dict(c.upload_headers(payload), **{"Content-Type": "application/octet-stream"}))
            sent += len(payload)
    return sent


class _Body:
    """A request body over existing memory: requests sends it with a Content-Length, unchunked, and
    without copying it into a bytes object."""

    def __init__(self, view):
        self.view = view
        self.pos = 0

    def __len__(self):
        return len(self.view) - self.pos

    def read(self, n=-1):
        end = len(self.view) if n is None or n < 0 else min(len(self.view), self.pos + n)
        out = self.view[self.pos:end]
        self.pos = end
        return out


# ---------------------------------------------------------------- decoding

def _dtype_of(short):
    try:
        return np.dtype(_NUMPY_DTYPES[short])
    except KeyError:
        raise TenplexError("the daemon sent an unknown dtype %r" % short) from None


def _fetch_tensor(c, path, short, shape, as_torch):
    dt = _dtype_of(short)
    a = np.empty(shape, dtype=dt)
    r = c.request("GET", "/api/v1/tensors" + _p(path), stream=True, headers=c.read_headers())
    try:
        view = memoryview(a.reshape(-1)).cast("B") if a.size else memoryview(b"")
        got = 0
        while got < len(view):
            n = r.raw.readinto(view[got:])
            if not n:
                raise TenplexError("%s: the daemon sent %d of %d bytes" % (path, got, len(view)))
            got += n
    finally:
        r.close()
    c.verify(path, r, view)
    if as_torch:
        if short == "bf16":
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)
    return a


def _value(suffix, data):
    if suffix == ".none":
        return None
    text = data.decode("utf-8") if suffix != ".bytes" and suffix != ".argparse.Namespace" else None
    if suffix == ".str":
        return text
    if suffix == ".int":
        return int(text)
    if suffix == ".float":
        return float(text)
    if suffix == ".bool":
        if text.strip() not in ("True", "False"):
            raise TenplexError("a .bool file holds %r, not True or False" % text)
        return text.strip() == "True"
    if suffix == ".bytes":
        return data
    return pickle.loads(data)


def download(prefix, client=None, as_torch=None):
    """Reads the tree below the store path ``prefix`` back into nested dicts, lists and tuples.
    Tensors come back as torch tensors when torch is installed (``as_torch=None``), else as numpy
    arrays (bf16 as ``uint16`` bit patterns in numpy)."""
    c = _client(client)
    if as_torch is None:
        as_torch = torch is not None
    if as_torch and torch is None:
        raise ImportError("as_torch=True needs torch")
    r = c.request("GET", "/api/v1/dirs" + _p(prefix), ok=(200, 404), params={"recursive": "true"})
    if r.status_code == 404:
        raise NoCheckpoint("nothing saved at %s: %s" % (prefix, r.text.strip()), 404, r.text.strip())
    root = prefix.rstrip("/") + "/"
    tree = {}
    markers = {}
    for e in r.json()["entries"]:
        rel = e["path"][len(root):]
        parts = rel.split("/")
        node = tree
        for d in parts[:-1]:
            node = node.setdefault(d, {})
        leaf = parts[-1]
        if leaf == "dir.meta":
            text = _read_file(c, e["path"]).decode()
            markers["/".join(parts[:-1])] = text.split("\n")[0]
            continue
        if e["type"] == "tensor":
            key = leaf[:-len(TENSOR)] if leaf.endswith(TENSOR) else leaf
            node[key] = _fetch_tensor(c, e["path"], e["dtype"], tuple(e["shape"]), as_torch)
            continue
        for s in _VALUE_SUFFIXES:
            if leaf.endswith(s):
                node[leaf[:-len(s)]] = _value(s, _read_file(c, e["path"]))
                break
        else:
            node[leaf] = _read_file(c, e["path"])  # a file of another writer: its bytes
    return _rebuild(tree, "", markers)


def _read_file(c, path):
    r = c.request("GET", "/api/v1/files" + _p(path), headers=c.read_headers())
    c.verify(path, r, r.content)
    return r.content


def _rebuild(node, path, markers):
    if not isinstance(node, dict):
        return node
    kids = {k: _rebuild(v, (path + "/" if path else "") + k, markers) for k, v in node.items()}
    kind = markers.get(path)
    if kind in ("list", "tuple"):
        items = [kids[str(i)] for i in range(len(kids))]
        if set(kids) != {str(i) for i in range(len(kids))}:
            raise TenplexError("list at %r has children %s, not 0..n-1" % (path, sorted(kids)))
        return tuple(items) if kind == "tuple" else items
    return kids


# ---------------------------------------------------------------- the three calls

def save(state, job=None, step=0, rank=None, world=None, config=None, client=None, addr=None, token=None):
    """Saves one rank's ``state`` as step ``step`` of ``job`` and seals it.

    The tree goes to ``/job/<job>/save/<rank>/`` (replacing what the rank saved before); then the
    rank is sealed: when all ``world`` ranks of the step are sealed, the step becomes the job's
    complete generation (until then readers keep the previous one). ``state=None`` seals a rank that
    saves nothing (a data-parallel replica). ``rank``, ``world`` and ``config`` default to ``RANK``,
    ``WORLD_SIZE`` and ``TENPLEX_CONFIG``. Returns the daemon's seal answer (tensors, bytes,
    complete)."""
    c = _client(client, addr, token)
    job = _job(job)
    rank = _env_int("RANK", 0) if rank is None else rank
    world = _env_int("WORLD_SIZE", 1) if world is None else world
    if config is None and os.environ.get("TENPLEX_CONFIG"):
        config = json.loads(os.environ["TENPLEX_CONFIG"])
    prefix = "/job/%s/save/%d" % (job, rank)
    c.request("DELETE", "/api/v1/dirs" + _p(prefix), ok=(200, 404), params={"recursive": "true"})
    if state is not None:
        upload(state, prefix, c)
    body = {"world": world}
    if config is not None:
        body["config"] = config
    if os.environ.get("TENPLEX_DAEMONS"):  # every worker's daemon (from a launcher): all of them learn of the seal
        body["daemons"] = json.loads(os.environ["TENPLEX_DAEMONS"])
    return c.request("POST", "/api/v1/jobs/%s/saves/%d/ranks/%d" % (_p(job), step, rank), json=body).json()


def load(job=None, rank=None, client=None, addr=None, token=None, as_torch=None):
    """Loads what the daemon prepared for ``rank`` under the job's current configuration
    (``/job/<job>/load/<rank>/``) and returns ``(state, step)``. Raises :class:`NoCheckpoint` when
    there is none (a first start)."""
    c = _client(client, addr, token)
    job = _job(job)
    rank = _env_int("RANK", 0) if rank is None else rank
    state = download("/job/%s/load/%d" % (job, rank), c, as_torch)
    r = c.request("GET", "/api/v1/files" + _p("/job/%s/iter" % job), ok=(200, 404), headers=c.read_headers())
    if r.status_code == 404:
        raise NoCheckpoint("/job/%s/load/%d exists but /job/%s/iter does not" % (job, rank, job), 404)
    c.verify("/job/%s/iter" % job, r, r.content)
    return state, int(r.text.strip())


def should_stop(job=None, step=None, group=None, client=None, addr=None, token=None):
    """Whether the job must stop now (save, then exit) because its resources change.

    ``step`` is the number of steps finished; a change announced for step S stops every rank once
    ``step >= S``. When ``torch.distributed`` is initialised, only rank 0 of ``group`` asks the
    daemon and the answer is broadcast, so all ranks agree; call it from every rank."""
    dist = torch.distributed if torch is not None and torch.distributed.is_available() else None
    if dist is not None and dist.is_initialized():
        src = 0 if group is None else dist.get_global_rank(group, 0) if hasattr(dist, "get_global_rank") \
            else sorted(dist.get_process_group_ranks(group))[0]
        flag = torch.zeros(1, dtype=torch.int32)
        if dist.get_rank() == src:
            flag[0] = int(_ask_stop(job, step, client, addr, token))
        dist.broadcast(flag, src=src, group=group)
        return bool(flag[0])
    return _ask_stop(job, step, client, addr, token)


def _ask_stop(job, step, client, addr, token):
    c = _client(client, addr, token)
    params = {} if step is None else {"step": str(int(step))}
    return bool(c.request("GET", "/api/v1/jobs/%s/stop" % _p(_job(job)), params=params).json()["stop"])


def put_file(path, data, client=None):
    """Writes (or replaces) one file of the store, e.g. ``/job/<job>/model.json``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    c = _client(client)
    c.request("PUT", "/api/v1/files" + _p(path), ok=(200, 201), params={"replace": "true"}, data=data,
              headers=c.upload_headers(data))


# ---------------------------------------------------------------- optimizer state by parameter name

def _names(named_parameters):
    items = named_parameters.items() if isinstance(named_parameters, dict) else named_parameters
    return {id(p): n for n, p in items}


def optimizer_state_by_name(optimizer, named_parameters):
    """``optimizer.state_dict()`` keyed by parameter name, so that it reshards with its parameter.

    Returns ``{<state key>: {<param name>: tensor}, ..., "param_groups": [...]}``: e.g. Adam's
    ``exp_avg`` and ``exp_avg_sq`` per parameter. A per-parameter 0-d value that is equal for every
    parameter (Adam's ``step``) is kept once, as a float, under its key. ``param_groups`` keeps each
    group's settings without its parameter positions. Saved as ``state["optimizer"]``, a tensor is
    keyed ``optimizer.<state key>.<param name>`` (describe it with its parameter's partition)."""
    names = _names(named_parameters)
    sd = optimizer.state_dict()
    pos_to_name = {}
    for group, sd_group in zip(optimizer.param_groups, sd["param_groups"]):
        for p, pos in zip(group["params"], sd_group["params"]):
            if id(p) not in names:
                raise ValueError("an optimizer parameter has no name in named_parameters")
            pos_to_name[pos] = names[id(p)]
    out = {}
    scalars = {}
    for pos, st in sd["state"].items():
        for k, v in st.items():
            if torch is not None and isinstance(v, torch.Tensor) and v.dim() > 0:
                out.setdefault(k, {})[pos_to_name[pos]] = v
            else:
                scalars.setdefault(k, {})[pos_to_name[pos]] = float(v) if not isinstance(v, (bool, str)) else v
    for k, per in scalars.items():
        values = set(per.values())
        out[k] = values.pop() if len(values) == 1 else per
    out["param_groups"] = [{k: v for k, v in g.items() if k != "params"} for g in sd["param_groups"]]
    return out


def load_optimizer_state_by_name(optimizer, named_parameters, by_name):
    """The inverse of :func:`optimizer_state_by_name`: loads state keyed by name into ``optimizer``
    (whose parameters are those of ``named_parameters``, possibly other shards than were saved)."""
    names = _names(named_parameters)
    sd = optimizer.state_dict()
    groups = by_name.get("param_groups")
    if groups is not None and len(groups) != len(sd["param_groups"]):
        raise ValueError("saved state has %d parameter groups, the optimizer %d" % (len(groups), len(sd["param_groups"])))
    state = {}
    for gi, (group, sd_group) in enumerate(zip(optimizer.param_groups, sd["param_groups"])):
        if groups is not None:
            sd_group.update({k: (tuple(v) if isinstance(v, list) and k == "betas" else v) for k, v in groups[gi].items()})
        for p, pos in zip(group["params"], sd_group["params"]):
            name = names[id(p)]
            st = {}
            for k, v in by_name.items():
                if k == "param_groups":
                    continue
                if isinstance(v, dict):
                    if name in v:
                        st[k] = v[name] if not isinstance(v[name], float) else torch.tensor(v[name])
                elif isinstance(v, (int, float)):
                    st[k] = torch.tensor(float(v))
            if st:
                state[pos] = st
    sd["state"] = state
    optimizer.load_state_dict(sd)
