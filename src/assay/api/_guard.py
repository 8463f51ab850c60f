"""Requests a browser was tricked into sending are refused before any route runs.

A page on another site can make a browser send requests to the master (cross-site request
forgery), and a name whose DNS answer the attacker controls can point at the master's address
(DNS rebinding), making the master look same-origin to the attacker's page. So:

- a request whose ``Host`` is not one of the master's names gets 400 (Starlette's
  ``TrustedHostMiddleware`` decides; the refusal carries the API's error shape instead of its
  plain text);
- a request that may change state (any method but GET, HEAD and OPTIONS) and the WebSocket
  handshake get 403 when they carry an ``Origin`` that is neither the master's own (the host
  and port the request is addressed to, as for the web UI the master serves) nor an allowed
  one; ``null`` (sandboxed pages, some redirects) is never allowed. Programs (the CLI, agents,
  curl) send no ``Origin`` and pass; their requests are authenticated by token instead.

Beside it, a state-changing request signed in by the browser's session cookie must carry the
web UI's ``X-Assay-CSRF`` header (``_deps.py``), which no page of another origin can add.
"""

from __future__ import annotations

import ipaddress
import logging
import urllib.parse
from collections.abc import Iterable, Sequence

from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from assay.errors import AssayError, Forbidden, InvalidRequest

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Names a request may always address the master by: a page can only be served under them from
the master's own machine."""

WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
_MAX_LOGGED = 100


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` names a master bound to ``bind`` answers to: the loopback names, ``bind``
    itself unless it is a wildcard address, and ``extra`` (patterns as the config accepts)."""
    hosts = list(LOOPBACK_HOSTS)
    bound = [] if bind in WILDCARD_BINDS else [host_pattern(bind)]
    for name in [*bound, *extra]:
        if name not in hosts:
            hosts.append(name)
    return hosts


def host_pattern(name: str) -> str:
    """``name`` as a ``Host`` header spells it without its port (IPv6 literals in brackets)."""
    name = name.strip().lower()
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        return f"[{ipaddress.IPv6Address(bare)}]"
    except ValueError:
        return name


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the master reachable only from its own machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """ASGI middleware: the ``Host`` and ``Origin`` checks the module describes.

    ``hosts`` are ``TrustedHostMiddleware`` patterns (``*`` allows any); ``origins`` are
    ``scheme://host[:port]`` strings whose pages may change state besides the master's own.
    """

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str], origins: Sequence[str] = ()) -> None:
        self.app = app
        self.hosts = list(hosts)
        self._trusted = TrustedHostMiddleware(
            _mark_trusted, allowed_hosts=hosts, www_redirect=False
        )
        self._origins = {key for key in map(_origin_key, origins) if key is not None}
        self._logged: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = await self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        self._log_once(scope, refusal)
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get(
            "extensions", {}
        ):
            # Closing before accepting makes the server deny the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": refusal.message[:120]})
            return
        await JSONResponse(refusal.to_json(), status_code=refusal.status)(scope, receive, send)

    async def refusal(self, scope: Scope) -> AssayError | None:
        """Why the request in ``scope`` is refused, or None when it may go on."""
        headers = Headers(scope=scope)
        host = headers.get("host")
        if not await self._trusted_host(scope):
            allowed = ", ".join(self.hosts)
            return InvalidRequest(
                f"Host {host!r} is not a name this master answers to (it answers to: {allowed}); "
                "add it with --allowed-host or allowed_hosts in the master config"
            )
        origin = headers.get("origin")
        if origin is None:
            return None
        if scope["type"] == "http" and scope["method"].upper() in SAFE_METHODS:
            return None
        key = _origin_key(origin)
        if key is not None and (key in self._origins or _same_origin(key, host, scope)):
            return None
        what = "the agents' WebSocket" if scope["type"] == "websocket" else scope["method"]
        return Forbidden(
            f"Origin {origin!r} may not use {what} here: only pages of this master or of "
            "allowed_origins in the master config may change state"
        )

    async def _trusted_host(self, scope: Scope) -> bool:
        probe = {**scope, "assay.trusted_host": False}

        async def discard(_message: object) -> None:
            return None

        async def nothing() -> dict[str, object]:
            return {"type": "http.disconnect"}

        await self._trusted(probe, nothing, discard)
        return bool(probe["assay.trusted_host"])

    def _log_once(self, scope: Scope, refusal: AssayError) -> None:
        # Once per distinct refusal (bounded), so that a misconfigured name shows in the log
        # without a flood of requests flooding it too.
        if refusal.message in self._logged or len(self._logged) >= _MAX_LOGGED:
            return
        self._logged.add(refusal.message)
        client = scope.get("client") or ("?", 0)
        log.warning("refused a request from %s: %s", client[0], refusal.message)


async def _mark_trusted(scope: Scope, _receive: Receive, _send: Send) -> None:
    scope["assay.trusted_host"] = True


def _origin_key(origin: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin, the port made explicit; None for ``null`` or
    anything that is not ``http(s)://host[:port]``."""
    try:
        parts = urllib.parse.urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS[scheme]


def _same_origin(origin: tuple[str, str, int], host: str | None, scope: Scope) -> bool:
    """Whether ``origin`` names the host and port the request is addressed to. The scheme is
    left out: behind a proxy that ends TLS, the master sees http for a page served over https,
    and no other server can listen on the master's own port."""
    if host is None:
        return False
    try:
        parts = urllib.parse.urlsplit(f"//{host}")
        port = parts.port
    except ValueError:
        return False
    if port is None:
        port = _DEFAULT_PORTS.get(str(scope.get("scheme", "http")), 80)
    return (parts.hostname, port) == origin[1:]
