"""Check 2: exact round trips of device tensors of every dtype (plus empty, 0-d, non-contiguous and
strided views) through shared memory and through REST, loaded as new tensors and into existing
tensors on the device (``load(into=...)``)."""

import errno
import os

from checkutil import arguments, exit_with, host_bytes, main, same


def state(device):
    import torch
    g = torch.Generator(device="cpu").manual_seed(7)
    out = {}
    for name, dt in (("f32", torch.float32), ("f64", torch.float64), ("f16", torch.float16),
                     ("bf16", torch.bfloat16)):
        out[name] = torch.randn(5, 7, generator=g).to(dt)
    for name, dt in (("i8", torch.int8), ("u8", torch.uint8), ("i16", torch.int16), ("i32", torch.int32),
                     ("i64", torch.int64)):
        out[name] = torch.randint(-100 if dt != torch.uint8 else 0, 100, (3, 11), generator=g).to(dt)
    out["bool"] = torch.rand(13, generator=g) > 0.5
    out["empty"] = torch.empty(0, 4)
    out["zero_d"] = torch.tensor(3.25, dtype=torch.float64)
    base = torch.randn(6, 10, generator=g)
    out["transposed"] = base.t()  # non-contiguous
    out["strided"] = base[1:, ::3]  # a strided view with an offset
    out["big_odd"] = torch.randn(1000003, generator=g)  # an odd size, several pages
    return {"model": {k: v.to(device) for k, v in out.items()}, "step": 7}


def run(a):
    import torch

    import tenplex
    if a.device == "cuda":
        torch.cuda.set_device(0)
    c = tenplex.Client(a.addr)
    st = state(a.device)
    tensors = st["model"]
    figures, checked = {}, 0
    for how, flag in (("shared", True), ("rest", False)):
        job = "gpu-check-rt-%s-%d" % (how, os.getpid())
        try:
            tenplex.save(st, job=job, step=1, client=c, shared=flag)
            loaded, step = tenplex.load(job=job, client=c, shared=flag)
            assert step == 1 and loaded["step"] == 7, (step, loaded.get("step"))
            bad = [k for k, t in tensors.items() if not same(loaded["model"][k], t)]
            assert not bad, "%s load: %s differ" % (how, bad)
            into = {"model": {k: torch.zeros_like(t) for k, t in tensors.items()}}
            targets = dict(into["model"])
            back, _ = tenplex.load(job=job, client=c, shared=flag, into=into)
            for k, t in tensors.items():
                got = back["model"][k]
                assert got is targets[k], "%s: load(into=...) did not fill the given tensor" % k
                assert got.device == t.device, (k, got.device, t.device)
                assert host_bytes(got) == host_bytes(t), "%s load into %s tensors: %s differs" % (how, a.device, k)
            checked += 2 * len(tensors)
            if flag:
                figures["segments"] = segments(c, job, a.device)
            figures[how] = {"tensors": len(tensors), "bytes": sum(t.numel() * t.element_size() for t in tensors.values())}
        finally:
            c.request("DELETE", "/api/v1/dirs/job/%s" % job, ok=(200, 404), params={"recursive": "true"})
    if a.device == "cuda" and not figures["segments"]["registered"]:
        raise AssertionError("no writable mapping was registered with CUDA (device copies were staged)")
    dtypes = sorted({str(t.dtype).replace("torch.", "") for t in tensors.values()})
    return ("%d loads bit for bit (%s; empty, 0-d, transposed, strided; shared memory and REST; new tensors and "
            "into %s tensors); segments sealed (truncation refused)%s"
            % (checked, ",".join(dtypes), a.device, "; %d of %d mappings registered with CUDA"
               % (figures["segments"]["registered"], figures["segments"]["writable_mappings"])
               if a.device == "cuda" else ""), figures)


def segments(c, job, device):
    """The shared-memory segments the save used: registered with CUDA (a device tensor's copy is one
    DMA), and sealed (a truncation of the file the daemon hands out is refused with EPERM)."""
    from tenplex.wire import shared_memory
    maps = [m for m in shared_memory._maps.values() if m.writable]
    registered = sum(1 for m in maps if m.registered)
    pinned = shared_memory.pin(c, job, 0)
    try:
        files = sorted({e["file"] for e in pinned["entries"] if e.get("file")})
        assert files, "the saved tensors are not in shared memory"
        for f in files:
            try:
                os.truncate(f, 0)
                raise AssertionError("segment %s was truncated" % f)
            except OSError as e:
                assert e.errno == errno.EPERM, "truncating %s: %s (expected EPERM)" % (f, e)
    finally:
        shared_memory.release(c, job, pinned["id"])
    return {"files": len(files), "truncation": "refused (EPERM)", "writable_mappings": len(maps),
            "registered": registered if device == "cuda" else None}


if __name__ == "__main__":
    exit_with(main(run, arguments(__doc__.split("\n")[0])))
