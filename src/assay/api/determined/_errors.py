"""Errors under ``/det`` in Determined's shape: every route of the surface answers an error as
Determined's master does (``{"error": {"code", "reason", "error"}, "code", "message"}``), which
its clients print as one line, whatever raised it (the master, a refused token, a bad body)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from assay.errors import AssayError
from assay.rest import determined as det

log = logging.getLogger(__name__)


def det_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """An error answer of HTTP ``status`` in Determined's shape, saying ``message``."""
    body = det.det_error(status, message).model_dump(mode="json")
    return JSONResponse(body, status_code=status, headers=headers)


def said(exc: AssayError) -> str:
    """An error's message with each of its details it does not already say, on one line."""
    message = exc.message
    details = [str(d) for d in exc.details if d.message not in message]
    return f"{message}: {'; '.join(details)}" if details else message


def invalid(exc: RequestValidationError) -> str:
    """What a refused request got wrong, each field named as the client sent it."""
    problems = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            at = f" at character {loc[-1]}" if len(loc) > 1 else ""
            problems.append(f"the body is not valid JSON{at}")
        elif loc == ("body",):
            problems.append(
                f"the body must be a JSON object of the request's fields, got {_kind(err)}"
            )
        else:
            where = ".".join(str(p) for p in loc if p not in ("body", "query", "path"))
            problems.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "the request is not valid: " + "; ".join(problems)


def refused(exc: ValidationError) -> str:
    """What one of assay's request shapes refused in a value a Determined client sent."""
    problems = [
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" if err["loc"] else err["msg"]
        for err in exc.errors()
    ]
    return "the request is not valid: " + "; ".join(problems)


_JSON_KINDS = {list: "an array", dict: "an object", str: "a string", bool: "a boolean"}


def _kind(err: Any) -> str:
    """What JSON value a refused body was, in JSON's words."""
    value = err.get("input")
    if value is None:
        return "null or nothing"
    return _JSON_KINDS.get(type(value), "a number")


class DeterminedRoute(APIRoute):
    """A route whose errors are answered in Determined's shape instead of assay's, and whose
    body is read as JSON whatever its Content-Type says: Determined's clients send none, and
    its master reads every body as JSON (its grpc-gateway's marshaler for any media type)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["strict_content_type"] = False
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(_read_as_json(request))
            except AssayError as exc:
                return det_response(exc.status, said(exc))
            except RequestValidationError as exc:
                return det_response(400, invalid(exc))
            except ValidationError as exc:
                # What a route made of the request for assay's master (one of assay's own
                # request shapes) refused: the client sent a value assay does not take.
                return det_response(400, refused(exc))
            except HTTPException as exc:
                return det_response(exc.status_code, str(exc.detail), exc.headers)
            except Exception as exc:  # answered as Determined's clients read it, and logged
                log.exception("unexpected error under /det", exc_info=exc)
                return det_response(500, f"internal error: {type(exc).__name__}: {exc}")

        return handler


def _read_as_json(request: Request) -> Request:
    """``request`` with its body declared JSON, as Determined's master reads every body."""
    if request.headers.get("content-type", "").startswith("application/json"):
        return request
    headers = [(k, v) for k, v in request.scope["headers"] if k != b"content-type"]
    scope = {**request.scope, "headers": [*headers, (b"content-type", b"application/json")]}
    return Request(scope, request.receive)
