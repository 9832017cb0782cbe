"""Partition rules: name patterns to partitions, the short way to say how a model is cut.

A rules source is a dict ``{"rules": [rule, ...]}`` (also a bare list of rules), the path of a JSON
file holding one, or the name of a shipped set (``"megatron"``, ``"transformer"``; see
``rulesets/*.json``, the same files ptc-model ships). A list of sources is read in order. A rule::

    {"match": "*.linear1.*", "partition": "column"}

``match`` is a glob over the whole tensor name: ``*`` is any run of characters (dots too), ``{e}``
a number that is the expert index, ``{n}`` any number. The first rule that matches wins (an
optimizer moment is matched by its parameter's name). ``partition`` is one of

* ``"column"``: split along dim 0 (a column-parallel layer's weight and bias), ``"row"``: split
  along dim 1 (a row-parallel layer's weight); both take an optional ``"granule"`` (indices kept
  together, e.g. the rows of one attention head);
* ``"replicated"``;
* ``"vocab"``: split along ``"dim"`` (0) after padding to a multiple of ``"divisibleBy"`` (128) x T;
* ``"expert"``: the pattern holds ``{e}``; ``"experts"`` (how many) and ``"inner"`` (how one
  expert is cut: column, row or replicated);
* or the model spec's own object form (``{"kind": "split", "dim": 2}``).

``"stage": "first"`` or ``"last"`` places a tensor that is in no ``layers.<n>.`` on a pipeline stage.
A number may be given as ``"${name}"``, taken from the ``params`` of :func:`compile`.
"""

import json
import os
import re

from .errors import TenplexError

SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rulesets")
_SHORT = {"column": {"kind": "split", "dim": 0}, "row": {"kind": "split", "dim": 1},
          "replicated": {"kind": "replicated"}, "vocab": {"kind": "vocab"}, "expert": {"kind": "expert"}}


class DescriptionError(TenplexError):
    """A model description that is ambiguous or inconsistent; the message names the tensor."""


class Rule:
    def __init__(self, pattern, partition, stage, source):
        self.pattern, self.partition, self.stage, self.source = pattern, partition, stage, source
        self.regex = _glob(pattern)

    def match(self, name):
        """The partition (dict) for ``name``, or ``None`` when the rule does not match it."""
        m = self.regex.fullmatch(name)
        if m is None:
            return None
        p = dict(self.partition)
        if p["kind"] == "expert":
            p["expert"] = int(m.group("e"))
        return p

    def __repr__(self):
        return "rule %r (%s)" % (self.pattern, self.source)


def _glob(pattern):
    out, i = [], 0
    for tok in re.split(r"(\*|\{e\}|\{n\})", pattern):
        if tok == "*":
            out.append(".*")
        elif tok == "{e}":
            out.append(r"(?P<e>\d+)")
            i += 1
        elif tok == "{n}":
            out.append(r"\d+")
        else:
            out.append(re.escape(tok))
    return re.compile("".join(out))


def _read(source):
    if isinstance(source, str):
        path = source if os.path.exists(source) else os.path.join(SHIPPED, source + ".json")
        if not os.path.exists(path):
            raise DescriptionError("rules %r: no such file and no shipped rules of that name (shipped: %s)"
                                   % (source, ", ".join(sorted(f[:-5] for f in os.listdir(SHIPPED)))))
        with open(path) as f:
            try:
                return json.load(f), path
            except ValueError as e:
                raise DescriptionError("rules %s are not valid JSON: %s" % (path, e)) from None
    return source, "dict"


def _is_rule(x):
    return isinstance(x, dict) and "match" in x


def _raw(sources):
    """``(rule dicts, where)`` of each source, in order: one source, or a list of them, where rule
    dicts may stand among the sources (``[{"match": ...}, "transformer"]``): consecutive ones are
    one source."""
    if not isinstance(sources, list):
        sources = [sources]
    grouped, inline = [], []
    for src in sources:
        if _is_rule(src):
            inline.append(src)
            continue
        if inline:
            grouped.append(inline)
            inline = []
        grouped.append(src)
    if inline:
        grouped.append(inline)
    out = []
    for src in grouped:
        data, where = _read(src)
        items = data.get("rules") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise DescriptionError("rules from %s: expected {\"rules\": [...]} or a list" % where)
        out.append((items, where))
    return out


def compile(sources, params=None):  # noqa: A001  (the rules' own verb)
    """The ordered :class:`Rule` list of one source or a list of sources (see the module doc)."""
    return [_rule(r, "%s #%d" % (where, i), params or {}) for items, where in _raw(sources)
            for i, r in enumerate(items)]


def stored_form(sources, params=None):
    """The rules of ``sources`` as one JSON object the daemon reads (``/job/<job>/rules.json``):
    ``{"rules": [...], "params": {...}}``, shipped sets and files read here. Checked first with
    :func:`compile`, so a bad rule fails before anything is stored."""
    compile(sources, params)
    out = {"rules": [r for items, _ in _raw(sources) for r in items]}
    if params:
        bad = sorted(k for k, v in params.items() if not isinstance(v, int) or isinstance(v, bool))
        if bad:
            raise DescriptionError("rule parameters must be whole numbers: %s" % ", ".join(bad))
        out["params"] = dict(params)
    return out


def _rule(r, where, params):
    if not isinstance(r, dict) or not isinstance(r.get("match"), str) or "partition" not in r:
        raise DescriptionError("%s: a rule needs \"match\" (a pattern) and \"partition\", got %r" % (where, r))
    p = r["partition"]
    if isinstance(p, str):
        if p not in _SHORT:
            raise DescriptionError("%s: partition %r is not one of %s" % (where, p, ", ".join(_SHORT)))
        p = dict(_SHORT[p])
    else:
        p = dict(p)
    for k in ("granule", "divisibleBy", "experts", "dim"):
        if k in r:
            p[k] = r[k]
    if "inner" in r:
        p["inner"] = r["inner"]
    p = _resolve(p, where, params)
    if p.get("kind") == "vocab":
        p.setdefault("dim", 0)
        p.setdefault("divisibleBy", 128)
    if p.get("kind") == "expert":
        if "{e}" not in r["match"] or "experts" not in p:
            raise DescriptionError("%s: an expert rule needs {e} in its pattern and \"experts\"" % where)
        inner = p.get("inner", "replicated")
        p["inner"] = dict(_SHORT[inner]) if isinstance(inner, str) else inner
    if p.get("kind") not in ("split", "vocab", "replicated", "expert"):
        raise DescriptionError("%s: partition kind %r is not split, vocab, replicated or expert" % (where, p.get("kind")))
    stage = r.get("stage")
    if stage not in (None, "first", "last"):
        raise DescriptionError("%s: stage %r is not first or last" % (where, stage))
    return Rule(r["match"], p, stage, where)


def _resolve(p, where, params):
    out = {}
    for k, v in p.items():
        if isinstance(v, str) and v.startswith("${") and v.endswith("}"):
            key = v[2:-1]
            if key not in params:
                raise DescriptionError("%s: %s is %s, but no such parameter was given (params: %s)"
                                       % (where, k, v, sorted(params)))
            v = params[key]
        out[k] = v
    return out


def first_match(rules, name):
    """``(rule, partition)`` of the first rule that matches ``name``, or ``(None, None)``."""
    for r in rules:
        p = r.match(name)
        if p is not None:
            return r, p
    return None, None
