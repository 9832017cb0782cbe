"""The Python client's layering, read from its modules' imports (as jobs/import-control.xml is for Java).

Every module of clients/python/tenplex belongs to one layer and imports only from the layers it may:

    entry points  tenplex (__init__), tenplex.client, tenplex.launch, tenplex.plot
        | may import every layer below; nothing imports them (but the package's own __init__)
    launchers     tenplex.launchers.*      -> api, wire, errors
    api           tenplex.<module>         -> wire, errors     (the training API)
    wire          tenplex.wire.*           -> errors           (the wire and value encoding)
    tools         tenplex.tools.*          -> errors
    errors        tenplex.errors           -> nothing of tenplex

Every import counts, also one inside a function (an import put off to run time is still a dependency).
There is no import circle between modules, and no module of the client is over 400 lines (the cap the
build sets for Java sources). A new module must be put in a layer here. The import paths users wrote
before the client was split (``tenplex.client``, ``python3 -m tenplex.launch``, ``-m tenplex.plot``, the
stop calls from ``tenplex.checkpoint``) keep working. No daemon is needed; prints OK."""

import ast
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "..", "..", "clients", "python", "tenplex")
MAX_LINES = 400

ENTRY_POINTS = {"tenplex", "tenplex.client", "tenplex.launch", "tenplex.plot"}
API = {"tenplex.checkpoint", "tenplex.stop", "tenplex.live", "tenplex.live_auth", "tenplex.downtime", "tenplex.data",
       "tenplex.streams", "tenplex.rehearsal", "tenplex.describe", "tenplex.rules", "tenplex.rank_env",
       "tenplex.c10d", "tenplex.dcp", "tenplex.dcp_stage", "tenplex.dcp_reader", "tenplex.background_save",
       "tenplex.generation_source", "tenplex.dtensor_load", "tenplex.rendezvous_exit"}
MAY_IMPORT = {
    "entry": {"entry", "launchers", "api", "wire", "tools", "errors"},
    "launchers": {"launchers", "api", "wire", "errors"},
    "api": {"api", "wire", "errors"},
    "wire": {"wire", "errors"},
    "tools": {"tools", "errors"},
    "errors": set(),
}


def layer(module):
    """The layer of a module or package of the client, or None for one that is in none."""
    if module in ENTRY_POINTS:
        return "entry"
    if module == "tenplex.errors":
        return "errors"
    if module in API:
        return "api"
    for sub in ("wire", "launchers", "tools"):
        if module == "tenplex." + sub or module.startswith("tenplex.%s." % sub):
            return sub
    return None


def module_name(rel_path):
    """'wire/routes.py' -> 'tenplex.wire.routes'; '__init__.py' -> 'tenplex'."""
    parts = ["tenplex"] + rel_path[:-len(".py")].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(module, source, modules):
    """The client's modules that ``source`` (the text of ``module``) imports, anywhere in it."""
    package = module if module in modules and modules[module] else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "tenplex")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "tenplex":
                continue
            for a in node.names:  # from X import y: y is a module of X, or a name defined in X
                found.add(target + "." + a.name if target + "." + a.name in modules else target)
    found.discard(module)
    return found


def read_client(root):
    """{module: (is a package, source)} of every module under ``root``."""
    out = {}
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path) as fh:
                    out[module_name(os.path.relpath(path, root))] = (f == "__init__.py", fh.read())
    return out


def check(client):
    """Every breach of the rules above in ``client`` ({module: (is a package, source)}), as sentences."""
    packages = {m: pkg for m, (pkg, _) in client.items()}
    graph, problems = {}, []
    for m, (_, source) in sorted(client.items()):
        lines = source.count("\n") + (0 if source.endswith("\n") else 1)
        if lines > MAX_LINES:
            problems.append("%s has %d lines (at most %d: split it by concept)" % (m, lines, MAX_LINES))
        mine = layer(m)
        if mine is None:
            problems.append("%s is in no layer (add it to tests/python/test_layers.py)" % m)
            continue
        graph[m] = imports(m, source, packages)
        for t in sorted(graph[m]):
            theirs = layer(t)
            if theirs is None or theirs not in MAY_IMPORT[mine]:
                problems.append("%s (%s) imports %s (%s), against the layering" % (m, mine, t, theirs))
    problems += ["import circle: " + " -> ".join(c) for c in circles(graph)]
    return problems


def circles(graph):
    """The import circles of ``graph`` ({module: modules it imports}), one per strongly connected group."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group) + [sorted(group)[0]])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_checker_sees_breaches():
    """The checker itself: each kind of breach in a made-up client is found (else this test proves nothing)."""
    made_up = {
        "tenplex": (True, "from .checkpoint import save\n"),
        "tenplex.errors": (False, ""),
        "tenplex.checkpoint": (False, "from .wire import routes\n"),
        "tenplex.stop": (False, "def f():\n    from . import live\n"),  # lazy: still counts
        "tenplex.live": (False, "from .stop import should_stop\n"),
        "tenplex.wire": (True, ""),
        "tenplex.wire.routes": (False, "from ..checkpoint import save\nimport tenplex.launchers.pod\n"),
        "tenplex.launchers": (True, ""),
        "tenplex.launchers.pod": (False, "from .. import launch\n"),
        "tenplex.launch": (False, "from .launchers.pod import main\n"),
        "tenplex.tools": (True, ""),
        "tenplex.tools.loss_plot": (False, "x = 1\n" * (MAX_LINES + 1)),
        "tenplex.extra": (False, ""),
    }
    found = "\n".join(check(made_up))
    for words in ("tenplex.wire.routes (wire) imports tenplex.checkpoint (api)",
                  "tenplex.wire.routes (wire) imports tenplex.launchers.pod (launchers)",
                  "tenplex.launchers.pod (launchers) imports tenplex.launch (entry)",
                  "import circle: tenplex.live -> tenplex.stop -> tenplex.live",
                  "tenplex.tools.loss_plot has 401 lines", "tenplex.extra is in no layer"):
        assert words in found, (words, found)
    assert not any(line.startswith(("tenplex (entry)", "tenplex.launch (entry)")) for line in found.split("\n")), found


def test_client_is_layered():
    client = read_client(PKG)
    assert {"tenplex", "tenplex.checkpoint", "tenplex.wire.routes", "tenplex.launchers.pod"} <= set(client), client
    problems = check(client)
    assert not problems, "\n".join(problems)


def test_former_paths_keep_working():
    sys.path.insert(0, os.path.dirname(PKG))
    import tenplex
    from tenplex.checkpoint import generations, should_stop, stop_state
    from tenplex.client import Client, NoCheckpoint, TENSOR, TenplexError, download, load, save, upload
    from tenplex.launch import main as launch_main
    from tenplex.plot import loss_plot

    assert (save, load, should_stop, Client, download, upload) == (tenplex.save, tenplex.load, tenplex.should_stop,
                                                                 tenplex.Client, tenplex.download, tenplex.upload)
    assert (NoCheckpoint, TenplexError, TENSOR) == (tenplex.NoCheckpoint, tenplex.TenplexError, ".numpy.ndarray")
    assert (generations, stop_state) == (tenplex.stop.generations, tenplex.stop.stop_state)
    assert launch_main is tenplex.launchers.pod.main and loss_plot is tenplex.tools.loss_plot.loss_plot
    for module, usage in (("tenplex.launch", "usage: python3 -m tenplex.launch"),
                          ("tenplex.plot", "usage: python3 -m tenplex.plot")):
        r = subprocess.run([sys.executable, "-m", module, "--help"], cwd=os.path.dirname(PKG), capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith(usage), (module, r.returncode, r.stdout, r.stderr)


if __name__ == "__main__":
    test_checker_sees_breaches()
    test_client_is_layered()
    test_former_paths_keep_working()
    print("OK")
    sys.exit(0)
