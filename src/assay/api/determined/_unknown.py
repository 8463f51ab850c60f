"""The catch-all under ``/det``, included after every served route: a method a served path
does not take is 405 naming those it takes; anything else is 404 naming the endpoint."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import Match

from assay.api.determined._base import PREFIX, open_router
from assay.api.determined._errors import det_response
from assay.api.determined._unserved import equivalent, unserved

_EVERY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]


def catch_all(served: Sequence[APIRouter]) -> APIRouter:
    """The router answering every request under ``/det`` that none of ``served`` does."""
    unknown = open_router()

    @unknown.api_route("", methods=_EVERY_METHOD)
    @unknown.api_route("/{path:path}", methods=_EVERY_METHOD)
    async def not_served(request: Request) -> Response:
        path = request.url.path.removeprefix(PREFIX) or "/"
        takes = sorted(
            method
            for router in served
            for route in router.routes
            if isinstance(route, APIRoute) and route.matches(request.scope)[0] is Match.PARTIAL
            for method in route.methods or ()
        )
        if takes:
            allowed = ", ".join(takes)
            message = f"{request.method} is not a method of {path}; it takes {allowed}"
            # A request Determined's clients make that assay serves otherwise (`det user
            # create`): its command too.
            message += equivalent(request.method, path)
            return det_response(405, message, headers={"Allow": allowed})
        return det_response(404, unserved(request.method, path))

    return unknown
