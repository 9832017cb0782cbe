"""A pre-started rank interpreter (``python -c <this file> SCRIPT ARGS...``): issue 30 item 2, relaunch path.

In relaunch mode ``tenplex run`` ends every rank at a resource change and starts the next
configuration's ranks after the daemon's commit; a fresh interpreter's ``import torch`` (about 1.2 s
on an idle machine, many seconds on a loaded one) then sat inside the downtime. Instead, when it posts
the change, ``tenplex run`` starts the next configuration's processes with this entry: it imports torch
and numpy (when installed) while the old ranks train, save and the daemon plans and moves, then waits
for one line on its stdin:

* ``go {"NAME": "VALUE", ...}``: the rank's final environment (``RANK``, ``WORLD_SIZE``,
  ``MASTER_PORT``, ``TENPLEX_TP``/``PP``/``DP``, ``TENPLEX_CONFIG``, ``TENPLEX_SEGMENT``,
  ``TENPLEX_SPAWN_TIME``... as JSON, known only at the commit) is put in ``os.environ``, then SCRIPT runs
  in this process with ``runpy.run_path`` as ``__main__``, ``sys.argv = [SCRIPT, ARGS...]`` and the
  script's directory first on ``sys.path``, as ``python SCRIPT ARGS...`` would run it: the user's code is
  unchanged, and the process's exit status is the script's;
* ``exit`` or the end of input (the change failed, the job ended, the launcher is gone): exits 0
  without running anything.

The launcher sends ``go`` only after every old rank has exited, and closes the pipe after it (the
script's stdin is then at its end). A ``go`` line that is not a JSON object of strings is refused
(exit 2, with the reason on stderr) before anything runs."""

import json
import os
import runpy
import sys

WARM = ("numpy", "torch")  # imported ahead; one that is not installed is left to the script to import or not
USAGE = "usage: python -c <tenplex/prestart.py> SCRIPT [ARGS...]; then one line on stdin: go {env JSON} | exit"


def warm(names=WARM):
    """Imports ``names`` ahead of the go; the names imported."""
    done = []
    for name in names:
        try:
            __import__(name)
            done.append(name)
        except ImportError:
            pass
    return done


def parse_env(text):
    """The environment of a ``go`` line: a JSON object of string names to string values, else ValueError."""
    env = json.loads(text)
    if not isinstance(env, dict):
        raise ValueError("the go line's environment is %s, not a JSON object" % type(env).__name__)
    for k, v in env.items():
        if not isinstance(v, str) or not k or "=" in k or "\0" in k or "\0" in v:
            raise ValueError("the go line's environment variable %r = %r is not a name and a string value" % (k, v))
    return env


def wait(stream):
    """Blocks for the launcher's line on ``stream`` (binary; the line is UTF-8, whatever the locale): the
    environment of ``go``, or None (``exit``, end of input)."""
    raw = stream.readline()
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("the launcher's line is not UTF-8 (%s)" % e) from None
    verb, _, rest = line.rstrip("\n").partition(" ")
    if verb == "go":
        return parse_env(rest)
    if verb in ("exit", ""):
        return None
    raise ValueError("unknown line %r from the launcher (go {env} | exit)" % line[:80])


def run(script, args, env):
    """Runs ``script`` as ``python script args...`` would, with ``env`` added to the environment."""
    os.environ.update(env)
    sys.argv = [script] + list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.stderr.write(USAGE + "\n")
        return 2
    warm()
    try:
        env = wait(sys.stdin.buffer)
    except ValueError as e:  # json's errors are ValueErrors too
        sys.stderr.write("tenplex prestart: %s; not running %s\n" % (e, argv[0]))
        return 2
    if env is None:
        return 0
    run(argv[0], argv[1:], env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
