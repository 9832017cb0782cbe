"""torch's c10d ``TCPStore`` as every torch this client supports makes it.

torch 2.4 and later ask for the libuv backend by default, and a torch built without libuv (Debian's
``python3-torch`` 2.x) then refuses to make a store at all, server or client ("use_libuv was requested
but PyTorch was build without libuv support"). torch 1.13 has no such option. :func:`tcp_store` asks
for the classic backend when ``USE_LIBUV=0`` says so (as torch's own ``env://`` rendezvous reads it),
and otherwise tries torch's default first and falls back to the classic backend only when this torch
lacks libuv. Everything else is passed to ``TCPStore`` unchanged."""

import os

_no_libuv = False


def _libuv_refused(e):
    return "libuv" in str(e)


def tcp_store(dist, *args, **kwargs):
    """``dist.TCPStore(*args, **kwargs)``, without libuv where this torch has none (or ``USE_LIBUV=0``)."""
    global _no_libuv
    if "use_libuv" not in kwargs and (_no_libuv or os.environ.get("USE_LIBUV", "1") == "0"):
        try:
            return dist.TCPStore(*args, use_libuv=False, **kwargs)
        except TypeError:  # torch 1.13: no such option, and no libuv either
            return dist.TCPStore(*args, **kwargs)
    try:
        return dist.TCPStore(*args, **kwargs)
    except RuntimeError as e:
        if "use_libuv" in kwargs or not _libuv_refused(e):
            raise
        _no_libuv = True
        return dist.TCPStore(*args, use_libuv=False, **kwargs)
