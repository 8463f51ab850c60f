"""Request body limits: every request body is counted as it arrives and refused with 413.

A request that declares a ``Content-Length`` over its route's limit is answered before any route
runs, so nothing is done on its behalf; a streamed (chunked) body is cut off at the first chunk
past the limit, so no more than the limit is ever read. FastAPI's own ``max_body_size`` does the
counting but answers a declared size with a fixed plain-text body, and only after a route that
reads no body has already run; the refusals here carry the API's error shape and happen first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.context import format_limit, format_size
from assay.errors import TooLarge

log = logging.getLogger(__name__)

DEFAULT_BODY_LIMIT = 8 * 2**20
"""What a request may carry unless its route says otherwise: room for a batch of a thousand
metric reports, or a checkpoint report listing a hundred thousand files."""


@dataclass(frozen=True)
class RouteLimit:
    """A route's own body limit, and what its refusal should suggest."""

    limit: int
    hint: str = ""


class BodyLimit:
    """ASGI middleware refusing request bodies over their route's limit with 413.

    ``routes`` maps ``(METHOD, path)`` to a :class:`RouteLimit`; every other request gets
    ``default`` bytes. Paths are compared without a trailing slash.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        default: int = DEFAULT_BODY_LIMIT,
        routes: Mapping[tuple[str, str], RouteLimit] | None = None,
    ) -> None:
        self.app = app
        self.default = RouteLimit(default)
        self.routes = {
            (method.upper(), _key(path)): rule for (method, path), rule in (routes or {}).items()
        }

    def limit_for(self, method: str, path: str) -> RouteLimit:
        return self.routes.get((method.upper(), _key(path)), self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = self.limit_for(scope["method"], scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > rule.limit:
            error = _refusal(scope, rule, f"this one declares {format_size(declared)}")
            await JSONResponse(error.to_json(), status_code=error.status)(scope, receive, send)
            return
        guard = _Guard(scope, receive, send, rule)
        try:
            await self.app(scope, guard.receive, guard.send)
        except Exception:
            if not guard.refused:
                raise
            # The route failed on the body that was cut off; the 413 has answered it already.
            log.debug("%s %s failed after its body was refused", scope["method"], scope["path"])


class _Guard:
    """The receive and send of one request: counts body bytes and, past the limit, answers 413
    and shows the route a disconnected client from then on."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, rule: RouteLimit) -> None:
        self._scope = scope
        self._receive = receive
        self._send = send
        self._rule = rule
        self.seen = 0
        self.refused = False
        self.started = False

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] != "http.request":
            return message
        self.seen += len(message.get("body", b""))
        if self.seen <= self._rule.limit:
            return message
        self.refused = True
        if not self.started:
            error = _refusal(
                self._scope, self._rule, f"{format_size(self.seen)} had arrived when it was cut off"
            )
            await JSONResponse(error.to_json(), status_code=error.status)(
                self._scope, self._receive, self._send
            )
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


def _refusal(scope: Scope, rule: RouteLimit, seen: str) -> TooLarge:
    message = (
        f"request body too large: {scope['method']} {scope['path']} accepts at most "
        f"{format_limit(rule.limit)} and {seen}"
    )
    return TooLarge(f"{message}; {rule.hint}" if rule.hint else message)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _key(path: str) -> str:
    return path.rstrip("/") or "/"
