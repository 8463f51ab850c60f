"""Stamps each read with the live-change position it was made at (``X-Assay-Event-Id``).

A page reads what it shows and opens its event stream at once; a change committed after the
read but before the stream subscribed would otherwise be missed. The position is taken before
the route runs, so the read sees at least every change up to it; a client whose read is older
than its stream's ``: subscribed`` position reads again (or resumes the stream from it).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

EVENT_ID_HEADER = "X-Assay-Event-Id"
_HEADER = EVENT_ID_HEADER.lower().encode()


class EventPosition:
    """ASGI middleware adding ``X-Assay-Event-Id`` to the answers of ``GET /api/...``."""

    def __init__(self, app: ASGIApp, *, position: Callable[[], str]) -> None:
        self.app = app
        self.position = position

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "GET"
            or not scope["path"].startswith("/api/")
        ):
            await self.app(scope, receive, send)
            return
        stamp = self.position().encode()

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (_HEADER, stamp)]
            await send(message)

        await self.app(scope, receive, stamped)
