"""``GET /metrics``: the master's Prometheus metrics, to signed-in admins and to a scraper
presenting ``observability.scrape_token``; and the timing of every request answered.

Requests are labelled by the OpenAPI document's path they match (``/api/v1/trials/{trial_id}``),
never by their URL, so the labels stay few; what matches none of the document's paths (the web
UI's pages, the proxy, the docs) is ``other``.
"""

from __future__ import annotations

import hmac
import logging
import time
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.api._deps import Credentials, MasterDep, SessionCookie, current_user
from assay.api._methods import DocumentedPaths
from assay.errors import Forbidden, NotFound
from assay.master.kernel import TEXT_FORMAT, Measures

log = logging.getLogger(__name__)
router = APIRouter(tags=["cluster"])

SLOW_REQUEST_SECONDS = 1.0
"""A request answered later than this is logged with its figures."""
LONG_POLLS = ("/wait", "/searcher/operation", "/signals/preemption")
"""Routes (by how their path ends) that answer when something happens or their timeout ends:
slow by design, never logged as slow."""

_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Every metric, in Prometheus's text format.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
}


@router.get("/metrics", response_class=Response, responses=_ANSWERS)
async def metrics(
    master: MasterDep, request: Request, credentials: Credentials, cookie: SessionCookie
) -> Response:
    """The master's Prometheus metrics: for admins, and for Prometheus with the scrape token
    (``observability.scrape_token`` in the master's config)."""
    settings = master.settings.observability
    if not settings.enable_prometheus:
        raise NotFound(
            "this master does not serve Prometheus metrics: its config sets "
            "observability.enable_prometheus to false"
        )
    token = credentials.credentials if credentials else ""
    scrape = settings.scrape_token
    if not (scrape and token and hmac.compare_digest(token.encode(), scrape.encode())):
        actor = await current_user(master, request, credentials, cookie)
        if not actor.admin:
            raise Forbidden(
                "only an admin, or Prometheus with the scrape token (observability.scrape_token "
                f"in the master's config), may read the metrics (you are {actor.username})"
            )
    return Response(await master.reads.metrics(), media_type=TEXT_FORMAT)


class RequestTiming:
    """ASGI middleware timing each request, from its arrival to its answer's start."""

    def __init__(self, app: ASGIApp, *, measures: Measures, paths: DocumentedPaths) -> None:
        self.app = app
        self.measures = measures
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = time.perf_counter() - began
                route = self.paths.template(scope["path"]) or "other"
                method, status = scope["method"], message["status"]
                self.measures.requests.labels(
                    method=method, route=route, status=str(status)
                ).observe(took)
                if took > SLOW_REQUEST_SECONDS and not route.endswith(LONG_POLLS):
                    log.warning(
                        "slow request: %s %s answered %d after %.2f s",
                        method,
                        route,
                        status,
                        took,
                        extra={
                            "method": method,
                            "route": route,
                            "status": status,
                            "seconds": round(took, 4),
                        },
                    )
            await send(message)

        await self.app(scope, receive, timed)
