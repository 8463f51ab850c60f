"""Methods a path does not take: 405 with every method it does take, in the API's error shape.

Starlette answers a method no route of a path takes from the first route of that path alone
(``Allow: GET`` for a path whose DELETE is another route), and not at all when a catch-all
takes every method: the web UI's catch-all and OpenPAI's unknown job routes answered
``PUT /api/v1/experiments`` with 404. What each path takes is what the API's own OpenAPI
document declares: the routes it is made from, read here directly (building the document's
schemas takes seconds, and every master's first request waited for it). A request whose path is
one of the document's, with a method it does not declare, is answered 405 with an ``Allow``
header naming every method the document gives that path. Anything else (a path the document
does not have, such as the web UI's pages or the docs) goes on to the routes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fastapi.routing import APIRoute, iter_route_contexts
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from assay.errors import MethodNotAllowed

_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
_PARAMETER = re.compile(r"\{[^}/]+\}")


class DocumentedPaths:
    """The OpenAPI document's paths, matched against request paths. ``routes`` returns the
    app's routes; they are read at the first match (every route is added by then)."""

    def __init__(self, routes: Callable[[], Iterable[BaseRoute]]) -> None:
        self.routes = routes
        self._paths: dict[int, list[_Path]] | None = None
        """The document's paths by their number of segments: every request is looked up, so
        it is matched only against the paths that can be its own."""

    def of(self, path: str) -> list[_Path]:
        """The document's paths of the URL path ``path`` (none: not one of the document's).

        A URL may match several paths (``/experiments/validate`` and ``/experiments/{id}``):
        as OpenAPI matches a concrete path before a templated one, those with the fewest
        parameters are its paths."""
        if self._paths is None:
            by_segments: dict[int, list[_Path]] = {}
            for known in documented_paths(self.routes()):
                by_segments.setdefault(known.segments, []).append(known)
            self._paths = by_segments
        candidates = self._paths.get(path.count("/"), [])
        matched = [p for p in candidates if p.pattern.fullmatch(path)]
        if not matched:
            return []
        fewest = min(p.parameters for p in matched)
        return [p for p in matched if p.parameters == fewest]

    def template(self, path: str) -> str | None:
        """The document's path (``/api/v1/experiments/{experiment_id}``) of ``path``."""
        found = self.of(path)
        return found[0].template if found else None


class MethodCheck:
    """ASGI middleware answering 405 to a method the OpenAPI document does not give a path."""

    def __init__(self, app: ASGIApp, *, paths: DocumentedPaths) -> None:
        self.app = app
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            allowed = self.refusal(scope["method"], scope["path"])
            if allowed is not None:
                error = MethodNotAllowed(
                    f"{scope['method']} is not a method of {scope['path']}; it takes {allowed}"
                )
                answer = JSONResponse(error.to_json(), status_code=405, headers={"Allow": allowed})
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, method: str, path: str) -> str | None:
        """``Allow``'s value when the document's path for ``path`` does not declare
        ``method``; None when it does, or when ``path`` is none of the document's paths."""
        matched = self.paths.of(path)
        if not matched:
            return None
        allowed = {m for p in matched for m in p.methods}
        return None if method in allowed else ", ".join(sorted(allowed))


@dataclass(frozen=True)
class _Path:
    template: str
    pattern: re.Pattern[str]
    methods: frozenset[str]
    parameters: int
    segments: int


def document_methods(routes: Iterable[BaseRoute]) -> dict[str, frozenset[str]]:
    """The methods of each path of the OpenAPI document made from ``routes``: the routes it
    includes (FastAPI's, not hidden from the schema), merged by path."""
    methods: dict[str, frozenset[str]] = {}
    # As FastAPI's get_openapi walks them: included routers' routes with their prefixes.
    for route in iter_route_contexts(list(routes)):
        if isinstance(route.original_route, APIRoute) and route.include_in_schema:
            path, taken = route.path_format, route.methods or set()
            if path is not None:
                found = frozenset(m.upper() for m in taken if m.lower() in _METHODS)
                methods[path] = methods.get(path, frozenset()) | found
    return methods


def documented_paths(routes: Iterable[BaseRoute]) -> list[_Path]:
    """Each path of the OpenAPI document made from ``routes`` as a pattern matching its URLs (a
    parameter is one segment), with the methods declared for it."""
    out: list[_Path] = []
    for template, methods in document_methods(routes).items():
        pieces = _PARAMETER.split(template)
        pattern = re.compile("[^/]+".join(re.escape(piece) for piece in pieces))
        out.append(_Path(template, pattern, methods, len(pieces) - 1, template.count("/")))
    return out
