"""Check 3: a GPT-like state (fp32 weights plus Adam) on the device, saved and loaded every way,
side by side in one run, each as a ratio to the device-to-host floor (pinned, preallocated memory):
torch.save / torch.load to and from /dev/shm, torch.distributed.checkpoint save, load and
async_save, tenplex's blocking save (the part a step waits for), completed save and load into the
existing tensors, and the step time while an asynchronous tenplex save runs beside training."""

import os
import shutil
import statistics
import tempfile
import time

from checkutil import arguments, exit_with, main, same
from gpt_state import gpt_state, sync, tensors, timed


def step_work(device):
    """A training-like step of fixed device work (matmuls), and the time of one."""
    import torch
    n = 8192 if device == "cuda" else 384
    x = torch.randn(n, n, device=device)
    w = torch.randn(n, n, device=device)

    def step():
        y = x
        for _ in range(4):
            y = torch.tanh(y @ w)
        return y
    return step


def step_times(step, device, count=None, until=None):
    """The times of ``count`` steps, or of the steps run until ``until()`` (at least one)."""
    times = []
    while True:
        sync(device)
        t = time.perf_counter()
        step()
        sync(device)
        times.append(time.perf_counter() - t)
        if (count is not None and len(times) >= count) or (until is not None and until()) or len(times) > 10000:
            return times


def run(a):
    import torch
    import torch.distributed as dist

    import tenplex
    dev = a.device
    if dev == "cuda":
        torch.cuda.set_device(0)
    st = gpt_state(int(a.size_gb * 1e9), None, 50257, dev)
    ts = tensors(st)
    nbytes = sum(t.numel() * t.element_size() for t in ts)
    gb = nbytes / 1e9
    c = tenplex.Client(a.addr)
    figures = {"state": {"tensors": len(ts), "GB": round(gb, 3), "device": dev, "rounds": a.rounds,
                         "torch": torch.__version__}}
    rows = figures["rows"] = {}
    print("state: %d tensors, %.3f GB on %s; %d rounds (medians); torch %s" % (len(ts), gb, dev, a.rounds,
                                                                             torch.__version__), flush=True)

    def report(name, seconds):
        rows[name] = {"s": round(seconds, 4), "GB/s": round(gb / seconds, 2),
                      "x_floor": round(seconds / rows["floor"]["s"], 2) if "floor" in rows else 1.0}
        print("%-46s %8.3f s %7.2f GB/s %7.2fx floor" % (name, seconds, gb / seconds, rows[name]["x_floor"]), flush=True)

    dst = [torch.empty(t.shape, dtype=t.dtype, pin_memory=(dev == "cuda")) for t in ts]
    for d in dst:
        d.fill_(0)

    def floor():
        for s, d in zip(ts, dst):
            d.copy_(s, non_blocking=True)
    report("floor", timed(floor, a.rounds, dev))
    del dst

    tmp = tempfile.mkdtemp(dir=a.shm, prefix="gpu-check-")
    try:
        path = os.path.join(tmp, "state.pt")
        report("torch.save to %s" % a.shm, timed(lambda: torch.save(st, path), a.rounds, dev))
        report("torch.load from %s to %s" % (a.shm, dev),
               timed(lambda: torch.load(path, map_location=dev, weights_only=False), a.rounds, dev))
        os.remove(path)
        dcp_rows(st, tmp, a, dev, report, figures, dist, c)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    job = "gpu-check-state-%d" % os.getpid()
    step = [0]

    def save_async():
        step[0] += 1
        return tenplex.save(st, job=job, step=step[0], client=c, blocking=False)
    try:
        for _ in range(2):  # warm-up: segments freed by older generations are reused from here on
            save_async().wait()
        report("tenplex save, blocking part (async)", timed(save_async, a.rounds, dev, before=tenplex.wait_saves))
        tenplex.wait_saves()
        via = {"tenplex save, blocking part (async)": tenplex.last_saved()["via"]}

        def save_completed():
            step[0] += 1
            tenplex.save(st, job=job, step=step[0], client=c)
        report("tenplex save, completed (published, sealed)", timed(save_completed, a.rounds, dev))
        via["tenplex save, completed (published, sealed)"] = tenplex.last_saved()["via"]
        figures["via"] = via  # the way the timed saves went: shared_memory, or rest (a fallback)
        into = {"model": {k: torch.empty_like(v) for k, v in st["model"].items()},
                "optimizer": {"state": {i: {k: torch.empty_like(v) for k, v in s.items()}
                                        for i, s in st["optimizer"]["state"].items()}}}
        report("tenplex load into existing tensors", timed(lambda: tenplex.load(job=job, client=c, into=into),
                                                           a.rounds, dev))
        figures["verified"] = verify_load(st, into, job, c, step[0])
        print("state: the load gave back all %(tensors)d tensors (%(bytes)d bytes) bit for bit, in place" %
              figures["verified"], flush=True)

        # the step time with and without an asynchronous save running beside it
        work = step_work(dev)
        step_times(work, dev, count=3)
        base = step_times(work, dev, count=max(6, 2 * a.rounds))
        during, saves = [], 0
        for _ in range(a.rounds):
            h = save_async()
            saves += 1
            during += step_times(work, dev, until=h.done)
            h.wait()
        figures["step"] = {"alone_s": round(statistics.median(base), 5), "steps_during_saves": len(during),
                           "during_save_s": round(statistics.median(during), 5) if during else None}
        slow = statistics.median(during) / statistics.median(base) - 1 if during else 0.0
        figures["step"]["slowdown"] = round(slow, 4)
        print("step %.4f s alone, %.4f s while an asynchronous save runs (%d steps over %d saves): %+.1f%%"
              % (statistics.median(base), statistics.median(during) if during else float("nan"), len(during), saves,
                 100 * slow), flush=True)

        def save_rest():
            step[0] += 1
            tenplex.save(st, job=job, step=step[0], client=c, shared=False)
        report("tenplex save over REST (reference)", timed(save_rest, 1, dev))
    finally:
        tenplex.wait_saves()
        c.request("DELETE", "/api/v1/dirs/job/%s" % job, ok=(200, 404), params={"recursive": "true"})
    f = rows["floor"]["s"]
    blocking = rows["tenplex save, blocking part (async)"]["s"]
    summary = {"blocking_x_floor": round(blocking / f, 2),
               "completed_x_floor": round(rows["tenplex save, completed (published, sealed)"]["s"] / f, 2),
               "load_into_x_floor": round(rows["tenplex load into existing tensors"]["s"] / f, 2),
               "blocking_faster_than_torch_save": round(rows["torch.save to %s" % a.shm]["s"] / blocking, 1),
               "async_step_slowdown": figures["step"]["slowdown"]}
    figures["summary"] = summary
    line = ("blocking save %.2fx floor (target <= 1.5), completed %.2fx (<= 3), load into tensors %.2fx (<= 2), "
            "blocking save %.1fx faster than torch.save (>= 30), step slowdown %+.1f%% (<= 5%%)"
            % (summary["blocking_x_floor"], summary["completed_x_floor"], summary["load_into_x_floor"],
               summary["blocking_faster_than_torch_save"], 100 * summary["async_step_slowdown"]))
    if dev == "cpu":  # the floor is a host memcpy and the daemon's checksums share the cores with the steps
        line += "; the targets are for a GPU (here the floor is a host copy and the daemon shares the CPU cores)"
    print("summary: " + line, flush=True)
    return line, figures


def named(x, path=""):
    """Every tensor of a state by its path (dict keys joined with /)."""
    import torch
    if isinstance(x, torch.Tensor):
        return {path: x}
    out = {}
    for k, v in (x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, (list, tuple)) else ()):
        out.update(named(v, "%s/%s" % (path, k)))
    return out


def verify_load(st, into, job, c, step):
    """Loads the saved state once more into ``into`` (its tensors overwritten with NaN first) and
    compares every tensor with the state's bit for bit (dtype, shape, bytes); the tensors and bytes
    compared. Raises ``AssertionError`` naming the first tensor that differs or was not filled in place."""
    import tenplex
    want, targets = named(st), named(into)
    assert list(want) == list(targets), "the tensors to load into are not the state's"
    for t in targets.values():
        t.fill_(float("nan"))
    got, at = tenplex.load(job=job, client=c, into=into)
    assert at == step, "loaded step %s, saved %s" % (at, step)
    got = named(got)
    assert list(got) == list(want), "loaded tensors %s, saved %s" % (sorted(set(got) ^ set(want))[:5], len(want))
    for p, t in want.items():
        assert got[p] is targets[p], "%s was not loaded into its existing tensor" % p
        assert same(got[p], t), "%s differs from the saved tensor (%s %s)" % (p, t.dtype, list(t.shape))
    return {"tensors": len(want), "bytes": sum(t.numel() * t.element_size() for t in want.values())}


def dcp_rows(st, tmp, a, dev, report, figures, dist, c):
    """torch.distributed.checkpoint save, load (into the state's own tensors) and async_save, where
    this torch has them (async_save needs a process group with a CPU backend), to /dev/shm and through
    tenplex.dcp."""
    try:
        import torch.distributed.checkpoint as dcp
        dcp.save, dcp.load  # noqa: B018 - torch < 2.2 has neither
    except (ImportError, AttributeError) as e:
        figures["dcp"] = "n/a (torch.distributed.checkpoint: %s)" % e
        print("torch.distributed.checkpoint: %s" % figures["dcp"], flush=True)
        return
    store = dist.FileStore(os.path.join(tmp, "pg-store"), 1)
    dist.init_process_group("cpu:gloo,cuda:nccl" if dev == "cuda" else "gloo", store=store, rank=0, world_size=1)
    try:
        d = os.path.join(tmp, "dcp")

        def clear():
            shutil.rmtree(d, ignore_errors=True)
        report("torch.distributed.checkpoint.save", timed(lambda: dcp.save(st, checkpoint_id=d), a.rounds, dev,
                                                           before=clear))
        report("torch.distributed.checkpoint.load (in place)", timed(lambda: dcp.load(st, checkpoint_id=d),
                                                                     a.rounds, dev))
        if hasattr(dcp, "async_save"):
            futures = []
            report("torch.distributed.checkpoint.async_save, blocking part",
                   timed(lambda: futures.append(dcp.async_save(st, checkpoint_id=d)), a.rounds, dev,
                         before=lambda: (futures and futures.pop().result(), clear())))
            t = time.perf_counter()
            futures.pop().result()
            figures["dcp_async_tail_s"] = round(time.perf_counter() - t, 4)
        tenplex_dcp_rows(st, a, dev, report, figures, dcp, c)
    except Exception as e:  # noqa: BLE001 - a torch without these features: recorded, the rest goes on
        figures["dcp"] = "failed: %s" % str(e).splitlines()[0][:200]
        print("torch.distributed.checkpoint: %s" % figures["dcp"], flush=True)
    finally:
        dist.destroy_process_group()


def tenplex_dcp_rows(st, a, dev, report, figures, dcp, c):
    """The same DCP calls with tenplex.dcp as the storage (and, for async_save, the stager)."""
    import tenplex.dcp
    job, step, futures = "gpu-check-dcp-%d" % os.getpid(), [0], []

    def writer():
        step[0] += 1
        return tenplex.dcp.Writer(job=job, step=step[0], client=c)
    report("DCP save through tenplex.dcp", timed(lambda: dcp.save(st, storage_writer=writer()), a.rounds, dev))
    report("DCP load through tenplex.dcp (in place)",
           timed(lambda: dcp.load(st, storage_reader=tenplex.dcp.Reader(job=job, client=c)), a.rounds, dev))
    report("DCP async_save through tenplex.dcp, blocking part",
           timed(lambda: futures.append(dcp.async_save(st, storage_writer=writer())), a.rounds, dev,
                 before=lambda: futures and futures.pop().result()))
    futures.pop().result()
    figures["tenplex_dcp_job"] = job


def extra(ap):
    ap.add_argument("--size-gb", type=float, default=4.25)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shm", default="/dev/shm")


if __name__ == "__main__":
    exit_with(main(run, arguments(__doc__.split("\n")[0], extra)))
