"""Authenticated values in the live rendezvous store: what a rank and a launcher accept from it.

Anyone who can reach the store's port can set any key (a c10d ``TCPStore`` has no authentication), so a
launcher signs every value it sets that a rank or another launcher acts on, with a secret only they
have, and a reader acts only on a value whose MAC verifies (docs/LIVE.md, "Who may hand out roles"):

* a **role** at ``tenplex/live/<n>`` is ``{"change": C, "role": R, "mac": M}``: ``R`` the role's JSON text
  exactly as the launcher wrote it, ``C`` the daemon's change id it hands out (``""`` when none) and ``M``
  the HMAC-SHA256 (hex) over ``tenplex-live-role``, the job, ``n``, ``C`` and ``R``, joined by NUL bytes,
  keyed with the UTF-8 bytes of the secret the launcher gave its ranks (``TENPLEX_LIVE_SECRET``). The job
  and ``n`` in the MAC make a role replayed into another reconfiguration's key (or another job's store)
  fail; the secret is per run (``tenplex run``) or per store (the pod launchers, :func:`derive`);
* a launcher's other values (:func:`seal`) carry a MAC over the job, the key and the text.

A rank started without a secret (by an older launcher) takes roles as before, with a warning."""

import hashlib
import hmac
import json
import sys

from .errors import TenplexError

_warned = []


def mac(secret, *parts):
    """HMAC-SHA256 (hex) keyed with ``secret`` (text) over ``parts`` (text) joined by NUL bytes."""
    msg = b"\0".join(p.encode("utf-8") for p in parts)
    return hmac.new(secret.encode("utf-8"), msg, hashlib.sha256).hexdigest()


def seal_role(secret, job, n, change, role_text):
    """The value a launcher sets at ``tenplex/live/<n>`` for the role ``role_text`` (JSON)."""
    change = change or ""
    return json.dumps({"change": change, "role": role_text,
                       "mac": mac(secret, "tenplex-live-role", job, str(n), change, role_text)})


def open_role(value, secret, job, n, rank):
    """The role (a dict) in ``value``, the text of ``tenplex/live/<n>``, once its MAC verifies with ``secret``;
    raises :class:`TenplexError` for any value that does not (nothing of it is acted on). ``secret`` None
    (the rank's launcher gave none): the value is taken as it is, with a warning."""
    where = "rank %d refused the value of tenplex/live/%d in the rendezvous store" % (rank, n)
    try:
        envelope = json.loads(value)
    except ValueError as e:
        raise TenplexError("%s: it is not JSON (%s)" % (where, e)) from e
    signed = isinstance(envelope, dict) and isinstance(envelope.get("mac"), str) \
        and isinstance(envelope.get("role"), str) and isinstance(envelope.get("change", ""), str)
    if secret is None:
        if not _warned:
            print("tenplex: rank %d has no TENPLEX_LIVE_SECRET (an older launcher?): it takes live roles without "
                  "checking who set them" % rank, file=sys.stderr, flush=True)
            _warned.append(True)
        return _role(json.loads(envelope["role"]) if signed else envelope, where)
    if not signed:
        raise TenplexError("%s: it came without a MAC, so not from this run's launcher (anyone who reaches the "
                           "store's port can set it); not acted on" % where)
    expected = mac(secret, "tenplex-live-role", job, str(n), envelope.get("change", ""), envelope["role"])
    if not hmac.compare_digest(expected, envelope["mac"]):
        raise TenplexError("%s: its MAC does not verify (not signed by this job's launcher for reconfiguration %d "
                           "of job %s, or replayed from another); not acted on" % (where, n, job))
    try:
        return _role(json.loads(envelope["role"]), where)
    except ValueError as e:
        raise TenplexError("%s: its role is not JSON (%s)" % (where, e)) from e


def _role(role, where):
    if not isinstance(role, dict):
        raise TenplexError("%s: the role is not a JSON object" % where)
    return role


def seal(secret, job, key, text):
    """The value a launcher sets at ``key`` for ``text`` (read with :func:`unseal`)."""
    return json.dumps({"value": text, "mac": mac(secret, "tenplex-live-key", job, key, text)})


def unseal(secret, job, key, value):
    """The text sealed in ``value`` (bytes or text read at ``key``), or None when it is not sealed with
    ``secret`` for ``job`` and ``key``."""
    try:
        envelope = json.loads(value.decode("utf-8") if isinstance(value, bytes) else value)
    except ValueError:
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("value"), str) \
            or not isinstance(envelope.get("mac"), str):
        return None
    expected = mac(secret, "tenplex-live-key", job, key, envelope["value"])
    return envelope["value"] if hmac.compare_digest(expected, envelope["mac"]) else None


def derive(secret, label):
    """A secret for ``label`` (hex), derived from ``secret``: who holds only the derived one cannot make
    ``secret`` or the secrets of other labels."""
    return mac(secret, "tenplex-live-derive", label)
