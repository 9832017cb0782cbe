"""What every check of bench/gpu-check shares: its arguments, its result file and exact comparison.

A check is a script run in its own process (a crash ends that check only) with ``--addr`` (the
daemon), ``--device`` and ``--result FILE``; it writes ``{"status": "ok"|"fail"|"skipped", "summary":
one line, "figures": {...}}`` there and exits 0 unless it failed."""

import argparse
import json
import sys
import traceback


def arguments(description, extra=None):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--addr", required=True, help="the daemon, http://host:port")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--result", required=True, help="where the JSON result goes")
    if extra:
        extra(ap)
    return ap.parse_args()


def write(path, status, summary, figures=None):
    with open(path, "w") as f:
        json.dump({"status": status, "summary": summary, "figures": figures or {}}, f, indent=1)


def main(run, a):
    """Runs ``run(a)`` -> ``(summary, figures)`` or ``("skipped", why)``; records what happened."""
    try:
        got = run(a)
    except Skip as s:
        write(a.result, "skipped", str(s))
        print("skipped: %s" % s, flush=True)
        return 0
    except BaseException as e:  # noqa: BLE001 - every failure is recorded with its reason
        traceback.print_exc()
        write(a.result, "fail", "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""))
        return 1
    summary, figures = got
    write(a.result, "ok", summary, figures)
    print("ok: %s" % summary, flush=True)
    return 0


class Skip(Exception):
    """The check cannot run here (the reason says why)."""


def host_bytes(t):
    """A tensor's bytes on the host, exactly (bf16 and bool included), for bit-for-bit comparison."""
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def same(a, b):
    """Same dtype, shape and bytes."""
    return a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and host_bytes(a) == host_bytes(b)


def exit_with(code):
    sys.stdout.flush()
    sys.exit(code)
