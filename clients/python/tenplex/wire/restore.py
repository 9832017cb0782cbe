"""A saved tree back into a state, optionally into the caller's existing tensors: from a pinned
load through shared memory (:func:`from_pin`) or over REST (:func:`from_rest`)."""

import base64
import logging

import numpy as np

from . import dtensor_layout, tree_codec, shared_memory, torch_values, type_tags
from ..errors import TenplexError
from .transfer import listing, read_file, read_tensor, read_tensors, reads_torch

log = logging.getLogger("tenplex")


def _describe(dtype, shape):
    return "%s%s" % (dtype, list(shape))


def _target_spec(t):
    short, shape, _ = shared_memory.spec(t)
    return short, list(shape)


def check_targets(tensors, targets):
    """Refuses, before anything is copied, a target whose dtype or shape differs from the saved
    tensor's. ``tensors``: relative path to (dtype, shape)."""
    bad = []
    for rel, t in targets.items():
        if rel in tensors:
            want = tensors[rel][0], list(tensors[rel][1])
            have = _target_spec(t)
            if have != want:
                bad.append("%s is %s in the checkpoint, %s in into" % (rel, _describe(*want), _describe(*have)))
    if bad:
        raise TenplexError("cannot load into the given tensors: " + "; ".join(bad[:5])
                           + (" (and %d more)" % (len(bad) - 5) if len(bad) > 5 else ""))
    missing = [rel for rel in targets if rel not in tensors]
    if missing:
        log.warning("tenplex: %d tensors of into are not in the checkpoint (kept as they are), e.g. %s",
                    len(missing), missing[0])


def refuse_shard_targets(targets, dir_meta):
    """Refuses, before anything is copied, a plain tensor of ``into`` where the tree holds a DTensor's
    shard (other ranks hold the other parts; it loads into a DTensor). ``dir_meta(dir)``: the bytes of a
    directory's ``dir.meta``, or None."""
    tags = {}
    for rel in targets:
        parent, _, leaf = rel.rpartition("/")
        if parent not in tags:
            raw = dir_meta(parent)
            tags[parent] = {} if raw is None else type_tags.parse_meta(tree_codec.dir_meta_lines(raw, parent), parent)[2]
        if dtensor_layout.is_part(tags[parent].get(leaf[:-len(tree_codec.TENSOR)])):
            raise TenplexError("%r was saved as a shard of a DTensor; into holds a plain tensor there: load it into "
                               "a DTensor (on the mesh it should have now)" % type_tags.where(rel[:-len(tree_codec.TENSOR)] if rel.endswith(tree_codec.TENSOR) else rel))


def _meta_path(parent):
    return (parent + "/" if parent else "") + tree_codec.DIR_META


def _into(value, target):
    """``value`` (read over REST) copied into ``target``."""
    if torch_values.is_tensor(target):
        src = value if torch_values.is_tensor(value) else torch_values.torch.from_numpy(np.ascontiguousarray(value))
        return target.copy_(src)
    np.copyto(target, value.numpy() if torch_values.is_tensor(value) else value)
    return target


def _unflatten(entries, prefix, read_file_fn, read_tensor_fn, targets, as_torch, allow_pickle, skip=None):
    own = {id(t) for t in list(targets.values()) + list((skip or {}).values())}
    return tree_codec.unflatten(entries, prefix, read_file_fn, read_tensor_fn, as_torch, allow_pickle,
                           lambda v: id(v) in own)


def from_pin(c, pinned, targets, as_torch, allow_pickle=False, over_rest=None, skip=None):
    """The state of a pinned load: tensors copied out of the daemon's shared memory (into
    ``targets``, relative path to tensor, where given), others and large files over REST (the paths
    of tensors read over REST are appended to ``over_rest``, where given). ``skip``: relative path to
    the value given back in a tensor's place without reading it (a tensor its caller fills)."""
    skip = skip or {}
    prefix = pinned["path"].rstrip("/")
    by_path = {prefix + "/" + e["path"]: e for e in pinned["entries"]}
    check_targets({e["path"]: (e["dtype"], e["shape"]) for e in pinned["entries"] if e["type"] == "tensor"}, targets)
    listing = [{"path": p, "type": e["type"], "dtype": e.get("dtype"), "shape": e.get("shape")}
               for p, e in by_path.items()]

    def file_bytes(path):
        e = by_path[path]
        return base64.b64decode(e["data"]) if e.get("data") is not None else read_file(c, path)

    refuse_shard_targets(targets, lambda d: file_bytes(prefix + "/" + _meta_path(d))
                         if prefix + "/" + _meta_path(d) in by_path else None)

    def tensor(le):
        e = by_path[le["path"]]
        if e["path"] in skip:
            return skip[e["path"]]
        target = targets.get(e["path"])
        m = shared_memory.mapping_of(e)
        if m is not None:
            return shared_memory.copy_out(m, e, target, read_torch)
        if over_rest is not None and e.get("size", 1) != 0:  # an empty tensor has no bytes to read anywhere
            over_rest.append(le["path"])
        value = read_tensor(c, le["path"], e["dtype"], tuple(e["shape"]), read_torch)
        return value if target is None else _into(value, target)

    read_torch = reads_torch(as_torch)
    state = _unflatten(listing, prefix, file_bytes, tensor, targets, as_torch, allow_pickle, skip)
    if any(torch_values.is_tensor(t) and t.is_cuda for t in targets.values()):
        torch_values.torch.cuda.synchronize()  # device copies end before the pin is released
    return state


def from_rest(c, prefix, targets, as_torch, allow_pickle=False, over_rest=None, skip=None):
    """The state below the store path ``prefix``, read over REST (into ``targets`` where given; the
    tensors' paths appended to ``over_rest``, where given; ``skip`` as for :func:`from_pin`)."""
    entries = listing(c, prefix)
    root = prefix.rstrip("/") + "/"
    skip = skip or {}
    check_targets({e["path"][len(root):]: (e["dtype"], e["shape"]) for e in entries if e["type"] == "tensor"},
                  targets)

    metas, listed = {}, {e["path"] for e in entries}

    def file_bytes(path):  # a dir.meta read for the check below is read once
        return metas.pop(path) if path in metas else read_file(c, path)

    def dir_meta(d):
        path = root + _meta_path(d)
        if path in listed and path not in metas:
            metas[path] = read_file(c, path)
        return metas.get(path)

    refuse_shard_targets(targets, dir_meta)
    read_torch = reads_torch(as_torch)
    read = read_tensors(c, [e for e in entries if e["path"][len(root):] not in skip], read_torch)

    def tensor(e):
        if e["path"][len(root):] in skip:
            return skip[e["path"][len(root):]]
        if over_rest is not None:
            over_rest.append(e["path"])
        value = read.pop(e["path"])
        target = targets.get(e["path"][len(root):])
        return value if target is None else _into(value, target)

    return _unflatten(entries, prefix, file_bytes, tensor, targets, as_torch, allow_pickle, skip)
