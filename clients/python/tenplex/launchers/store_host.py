"""The rendezvous store a launcher hosts before any rank starts (``python -m tenplex.launchers.store_host``).

torch's ``env://`` rendezvous lets rank 0 host its ``TCPStore``; ranks that connect before it
listens sleep a second before they retry, which made ``init_process_group`` take ~1 s at every
relaunch. A launcher that cannot host a c10d store itself (``tenplex run`` is Java) starts this helper
first, reads the port it listens on, and gives the ranks ``MASTER_PORT`` and
``TORCHELASTIC_USE_AGENT_STORE=True`` (every rank then connects as a client, as under torchrun's
agent). Live reconfiguration (docs/LIVE.md) uses the same store to hand the ranks their new roles.

Protocol (one line each way, so a launcher in any language can drive it):

* on start it prints ``port N listen ADDR`` on stdout: ``ADDR`` is where it listens, the ``--host`` it
  was given, or ``*`` when it listens on every interface (below);
* ``set KEY VALUE`` (VALUE: the rest of the line) sets a key; answer ``ok``;
* ``count KEY`` answers the counter KEY (0 when unset; ranks raise it with ``store.add``);
* end of input (the launcher exited or closed the pipe) ends the helper.

Anything else is answered ``error <why>``; the helper never exits on a bad line.

Where it listens. torch's ``TCPStore`` server binds the wildcard address whatever host it is given. Where
``TCPStore`` takes a listening socket of ours (``master_listen_fd``, torch 2.x; with ``use_libuv=False``
where that option exists), the helper binds ``--host`` itself and hands the socket over, so the store
listens there only. Where it does not (torch 1.13), the store listens on every interface: the helper reads
its listener in ``/proc/net/tcp`` and ``tcp6``, says so on stderr and prints ``listen *``, or, with
``TENPLEX_STORE_REQUIRE_LOOPBACK=1`` in its environment, refuses to serve (exit 2). Live roles are
authenticated either way (docs/LIVE.md); the store's other keys are not."""

import argparse
import datetime
import os
import socket
import sys


def serve(store, lines, write):
    """Answers ``lines`` against ``store`` until they end (``write`` takes each answer line)."""
    for line in lines:
        line = line.rstrip("\n")
        verb, _, rest = line.partition(" ")
        try:
            if verb == "set" and rest.strip():
                key, _, value = rest.partition(" ")
                store.set(key, value)
                write("ok")
            elif verb == "count" and rest.strip():
                write(str(store.add(rest.strip(), 0)))
            else:
                write("error unknown request %r (set KEY VALUE | count KEY)" % line[:80])
        except Exception as e:  # noqa: BLE001 - answered, the store keeps serving
            write("error %s" % e)


def _listener(host, port):
    """A socket bound to ``host``:``port`` and listening."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(128)
    except BaseException:
        s.close()
        raise
    return s


def listening(port):
    """The local addresses (hex, as ``/proc/net/tcp`` and ``tcp6`` write them) that listen on ``port``."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(hexport, 16) == port:
                found.append(addr)
    return found


LOOPBACK = ("0100007F", "00000000000000000000000001000000")


def host_store(dist, host, port, timeout):
    """(the master store, where it listens: ``host``, or ``*`` for every interface)."""
    s = _listener(host, port)
    for extra in ({"use_libuv": False}, {}):
        try:
            store = dist.TCPStore(host, s.getsockname()[1], None, True, timeout, wait_for_workers=False,
                                  master_listen_fd=s.fileno(), **extra)
        except TypeError:  # this torch has no such option (1.13: no master_listen_fd)
            continue
        except (RuntimeError, NotImplementedError, ValueError) as e:  # the store may have taken the fd: left to it
            s.detach()
            sys.stderr.write("tenplex store: torch's TCPStore did not take a socket bound to %s (%s)\n" % (host, e))
            break
        s.detach()  # the store owns the socket now
        return store, host
    else:
        s.close()
    try:  # the classic backend, as above: a torch built without libuv refuses the default (torch >= 2.4)
        store = dist.TCPStore(host, port, None, True, timeout, wait_for_workers=False, use_libuv=False)
    except TypeError:  # torch 1.13: no such option
        store = dist.TCPStore(host, port, None, True, timeout, wait_for_workers=False)
    found = listening(store.port)
    return store, host if found and all(a in LOOPBACK for a in found) else "*"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tenplex.launchers.store_host", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    args = ap.parse_args(argv)
    import torch.distributed as dist

    import torch

    store, where = host_store(dist, args.host, args.port, datetime.timedelta(seconds=60))
    if where == "*":
        if os.environ.get("TENPLEX_STORE_REQUIRE_LOOPBACK", "") in ("1", "true", "True"):
            sys.stderr.write("tenplex store: cannot listen on %s only: torch %s's TCPStore binds every interface and "
                             "takes no socket of ours (master_listen_fd); not serving (TENPLEX_STORE_REQUIRE_LOOPBACK)\n"
                             % (args.host, torch.__version__))
            return 2
        sys.stderr.write("tenplex store: listening on every interface at port %d, not only %s: torch %s's TCPStore "
                         "cannot bind one address. Ranks act only on authenticated roles; the store's other keys "
                         "(the process groups' rendezvous) are open to anyone who reaches the port (docs/LIVE.md)\n"
                         % (store.port, args.host, torch.__version__))
        sys.stderr.flush()

    def write(text):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    write("port %d listen %s" % (store.port, where))
    serve(store, sys.stdin, write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
