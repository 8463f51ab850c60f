"""Headers on every answer that keep the master's pages out of other sites' frames and its URLs
out of other sites' logs.

- The master's own pages and API answers: ``X-Frame-Options: DENY`` and
  ``Content-Security-Policy: frame-ancestors 'none'`` (no page may frame them, so none can
  trick a click on a button of the UI), ``Referrer-Policy: no-referrer`` (a link followed from
  the UI tells the next site nothing of where it came from) and
  ``X-Content-Type-Options: nosniff``.
- Proxied apps' pages (``/proxy/<id>/``, TensorBoard): their own headers pass, and what they
  leave out is added with ``SAMEORIGIN``/``frame-ancestors 'self'``: TensorBoard frames its own
  plugin pages, so ``DENY`` would break it, while other sites still cannot frame them. The
  ``frame-ancestors`` policy is a header of its own beside any the app sends: a browser
  enforces every policy it gets, so the app's cannot loosen it.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROXY_PREFIX = "/proxy/"

_OWN = (
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)
_PROXIED = (
    ("X-Frame-Options", "SAMEORIGIN"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)
_PROXIED_POLICY = "frame-ancestors 'self'"


class SecurityHeaders:
    """ASGI middleware adding the headers the module describes to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        proxied = str(scope.get("path", "")).startswith(PROXY_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if proxied:
                    for name, value in _PROXIED:
                        if name not in headers:
                            headers[name] = value
                    headers.append("Content-Security-Policy", _PROXIED_POLICY)
                else:
                    for name, value in _OWN:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
