"""The HTTP client of one daemon: a keep-alive session on the daemon's base URL, the token and the
TLS trust from arguments or the environment, checksums of bodies, and errors mapped to
:class:`TenplexError` (with the daemon's status, reason and, when it sends one, error code).

Configuration from the environment: ``TENPLEX_ADDR`` (default ``http://127.0.0.1:20010``;
``https://...`` for a daemon with TLS), the token from ``TENPLEX_TOKEN_FILE`` (a file holding it)
or ``TENPLEX_TOKEN``, ``TENPLEX_CA`` (a PEM file of the CA certificates to trust for https;
default: the system's) and ``TENPLEX_CHECKSUMS`` (``1``: ask for and send a CRC32C on every read
and upload). Requests are not retried: an error is raised at once."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import os

import requests

from . import crc32c
from ..errors import TenplexError

DEFAULT_ADDR = "http://127.0.0.1:20010"
ERROR_CODE_HEADER = "X-Tenplex-Error-Code"


def env_token():
    """The token from ``TENPLEX_TOKEN_FILE`` (the file's content, stripped) or else ``TENPLEX_TOKEN``."""
    path = os.environ.get("TENPLEX_TOKEN_FILE")
    if not path:
        return os.environ.get("TENPLEX_TOKEN")
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise TenplexError("cannot read token file %s (%s)" % (path, type(e).__name__)) from None
    if not token:
        raise TenplexError("token file %s is empty" % path)
    return token


def base_url(addr):
    """The daemon's base URL from ``addr`` or ``TENPLEX_ADDR`` (``http://`` when no scheme is given)."""
    url = (addr or os.environ.get("TENPLEX_ADDR") or DEFAULT_ADDR).rstrip("/")
    return url if "://" in url else "http://" + url


def reason_of(response):
    """The daemon's one-line reason: the ``error`` of a JSON error body, else the text body."""
    if response.headers.get("Content-Type", "").startswith("application/json"):
        try:
            body = response.json()
            if isinstance(body, dict) and isinstance(body.get("error"), str):
                return body["error"].strip()
        except ValueError:
            pass
    return response.text.strip()


def error_of(method, path, response):
    """The :class:`TenplexError` for a refused request."""
    reason = reason_of(response)
    return TenplexError("%s %s: %d %s" % (method, path, response.status_code, reason), response.status_code, reason,
                        response.headers.get(ERROR_CODE_HEADER))


class Client:
    """A connection to one daemon (keep-alive). ``addr``, ``token`` and ``ca`` default to the environment.

    ``ca`` is a PEM file of CA certificates to trust for an ``https://`` address (``TENPLEX_CA``);
    without it the system's trusted CAs apply.

    Every body the daemon sends with ``x-tensor-crc32c`` is verified (a mismatch raises
    :class:`TenplexError`; without a native CRC32C implementation, see :mod:`tenplex.wire.crc32c`, only
    bodies up to 1 MiB are). With ``checksums=True`` (default: ``TENPLEX_CHECKSUMS=1``) every read
    also asks for one (``x-want-crc32c``) and fails when it does not come, and every upload carries
    the body's CRC32C, which the daemon verifies before it stores anything."""

    def __init__(self, addr: Optional[str] = None, token: Optional[str] = None, timeout: Optional[float] = 300,
                 ca: Optional[str] = None, checksums: Optional[bool] = None) -> None:
        self.addr = base_url(addr)
        self.token = token if token is not None else env_token()
        self.timeout = timeout
        if checksums is None:
            checksums = os.environ.get("TENPLEX_CHECKSUMS", "").lower() in ("1", "true", "yes")
        self.checksums = bool(checksums)
        self.session = requests.Session()
        # given with every request: a session-wide verify would lose to REQUESTS_CA_BUNDLE in the environment
        self.ca = ca or os.environ.get("TENPLEX_CA") or None
        if self.token:
            self.session.headers["Authorization"] = "Bearer " + self.token

    def request(self, method: str, path: str, ok: Tuple[int, ...] = (200,), **kw: Any) -> requests.Response:
        """Sends a request to the route ``path``; raises :class:`TenplexError` unless its status is in ``ok``."""
        url = self.addr + path
        try:
            if self.ca:
                kw.setdefault("verify", self.ca)
            r = self.session.request(method, url, timeout=self.timeout, **kw)
        except requests.ConnectionError as e:
            raise TenplexError("cannot reach the tenplex daemon at %s (%s)" % (self.addr, e)) from None
        if r.status_code not in ok:
            raise error_of(method, path, r)
        return r

    def clone(self) -> "Client":
        """A new client with this one's settings (address, token, TLS trust, timeout, checksums) and
        its own session, for another thread: a ``requests`` session is not safe to share."""
        return Client(self.addr, self.token, self.timeout, self.ca, self.checksums)

    def close(self) -> None:
        self.session.close()

    def read_headers(self):
        """Headers for a read: asks for the body's checksum when :attr:`checksums` is on."""
        return {crc32c.WANT_HEADER: "1"} if self.checksums else {}

    def upload_headers(self, body):
        """Headers for an upload of ``body`` (bytes-like, or a list of bytes-like pieces sent one after
        the other): its checksum when :attr:`checksums` is on."""
        if not self.checksums:
            return {}
        crc = 0
        for piece in body if isinstance(body, list) else [body]:
            crc = crc32c.crc32c(piece, crc)
        return {crc32c.HEADER: crc32c.hex8(crc)}

    def verify(self, path, response, body):
        """Checks ``body`` against the checksum the daemon sent with ``response``."""
        sent = response.headers.get(crc32c.HEADER)
        if sent is None:
            if self.checksums:
                raise TenplexError("%s: the daemon sent no %s although it was asked for" % (path, crc32c.HEADER))
            return
        want = crc32c.parse(sent)
        if want is None:
            raise TenplexError("%s: malformed %s %r" % (path, crc32c.HEADER, sent))
        if not crc32c.FAST and not self.checksums and len(body) > _SLOW_VERIFY_LIMIT:
            _warn_slow()
            return
        got = crc32c.crc32c(body)
        if got != want:
            raise TenplexError("%s: checksum mismatch: the daemon sent %s, the %d bytes received have %s"
                               % (path, crc32c.hex8(want), len(body), crc32c.hex8(got)))


_SLOW_VERIFY_LIMIT = 1 << 20
_warned = []


def _warn_slow():
    if not _warned:
        _warned.append(True)
        import warnings
        warnings.warn("no native CRC32C implementation (install python3-crcmod or the crc32c package): bodies over "
                      "1 MiB are not verified")


_default = {}


def client_for(client=None, addr=None, token=None):
    """``client``, or the shared default client of ``addr`` and ``token`` (made on first use)."""
    if client is not None:
        return client
    key = (addr, token)
    if key not in _default:
        _default[key] = Client(addr, token)
    return _default[key]
