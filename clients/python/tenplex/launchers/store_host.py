"""The rendezvous store a launcher hosts before any rank starts (``python -m tenplex.launchers.store_host``).

torch's ``env://`` rendezvous lets rank 0 host its ``TCPStore``; ranks that connect before it
listens sleep a second before they retry, which made ``init_process_group`` take ~1 s at every
relaunch. A launcher that cannot host a c10d store itself (``tenplex run`` is Java) starts this helper
first, reads the port it listens on, and gives the ranks ``MASTER_PORT`` and
``TORCHELASTIC_USE_AGENT_STORE=True`` (every rank then connects as a client, as under torchrun's
agent). Live reconfiguration (docs/LIVE.md) uses the same store to hand the ranks their new roles.

Protocol (one line each way, so a launcher in any language can drive it):

* on start it prints ``port N`` on stdout;
* ``set KEY VALUE`` (VALUE: the rest of the line) sets a key; answer ``ok``;
* ``count KEY`` answers the counter KEY (0 when unset; ranks raise it with ``store.add``);
* end of input (the launcher exited or closed the pipe) ends the helper.

Anything else is answered ``error <why>``; the helper never exits on a bad line."""

import argparse
import datetime
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tenplex.launchers.store_host", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    ap.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    args = ap.parse_args(argv)
    import torch.distributed as dist

    store = dist.TCPStore(args.host, args.port, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)

    def write(text):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    write("port %d" % store.port)
    serve(store, sys.stdin, write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
