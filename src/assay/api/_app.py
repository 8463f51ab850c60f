"""The FastAPI application: routes, error shapes, and the master's start and stop."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

import assay
from assay import rest
from assay.api import (
    _analysis,
    _checkpoints,
    _cluster,
    _events,
    _experiments,
    _harness,
    _interactive,
    _jobs,
    _metrics,
    _models,
    _openpai,
    _proxy,
    _tasks,
    _tensorboards,
    _trials,
    _users,
)
from assay.api._docs import install_docs
from assay.api._event_position import EventPosition
from assay.api._guard import Guard, allowed_hosts
from assay.api._headers import SecurityHeaders
from assay.api._limits import DEFAULT_BODY_LIMIT, BodyLimit
from assay.api._methods import DocumentedPaths, MethodCheck
from assay.api._metrics import RequestTiming
from assay.api._upload import UPLOAD_ROUTE_LIMIT
from assay.api._webui import install_webui
from assay.api.determined import CREATE_LIMIT as DET_CREATE_LIMIT
from assay.api.determined import PREFIX as DET_PREFIX
from assay.api.determined import ROUTERS as DET_ROUTERS
from assay.errors import (
    AssayError,
    Conflict,
    ErrorDetail,
    Forbidden,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    TooLarge,
    TooManyRequests,
    Unauthorized,
)
from assay.master import Master

log = logging.getLogger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": rest.ErrorResponse, "description": description}
    for status, description in (
        (400, "The request is not valid: `details` names each bad field."),
        (401, "No token, or one that is not valid: sign in first."),
        (403, "Signed in, but only the owner or an admin may do this."),
        (404, "No such experiment, trial, checkpoint, job, pool or model."),
        (409, "Not possible in the object's current state."),
        (413, "The upload is over its size limit."),
    )
}


def create_app(master: Master) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await master.start()
        try:
            yield
        finally:
            await _proxy.close_proxy_client(app)
            await master.stop()

    app = FastAPI(
        title="assay",
        version=assay.__version__,
        description="REST API of the assay master.",
        lifespan=lifespan,
        # Served by install_docs from packaged assets instead of FastAPI's CDN pages.
        docs_url=None,
        redoc_url=None,
    )
    app.state.master = master
    app.state.login_limits = _users.LoginLimits()
    for router in (
        _experiments.router,
        _analysis.router,
        _trials.router,
        _trials.streams,
        _events.router,
        _harness.router,
        _checkpoints.router,
        _jobs.router,
        _models.router,
        _tasks.submit,
        _tasks.router,
        _tensorboards.router,
        _interactive.router,
        _interactive.shells,
        _openpai.router,
        _cluster.router,
        _users.router,
        _users.signed_in,
        _metrics.router,
    ):
        app.include_router(router, responses=_ERRORS)
    # Determined's API for its own clients, under /det; its catch-all after its routes.
    for router in DET_ROUTERS:
        app.include_router(router)
    app.include_router(_proxy.router)
    app.include_router(_interactive.tunnel)
    install_docs(app)
    install_webui(app)
    # Innermost: a method a path does not take is 405 with all it takes, not the UI's 404.
    paths = DocumentedPaths(lambda: app.routes)
    app.add_middleware(MethodCheck, paths=paths)
    app.add_middleware(EventPosition, position=master.reads.event_position)
    app.add_middleware(
        BodyLimit,
        default=DEFAULT_BODY_LIMIT,
        routes={
            ("POST", "/api/v1/experiments"): UPLOAD_ROUTE_LIMIT,
            ("POST", "/api/v1/jobs"): UPLOAD_ROUTE_LIMIT,
            ("POST", "/api/v1/experiments/validate"): UPLOAD_ROUTE_LIMIT,
            ("POST", "/api/v1/jobs/validate"): UPLOAD_ROUTE_LIMIT,
            ("POST", f"{DET_PREFIX}/api/v1/experiments"): DET_CREATE_LIMIT,
        },
    )
    # Added next to last, so it runs before the rest: a forged request is refused before its
    # body is read.
    settings = master.settings
    hosts = allowed_hosts(settings.host, settings.allowed_hosts)
    app.add_middleware(Guard, hosts=hosts, origins=settings.allowed_origins)
    # Outermost, so the Guard's refusals carry the headers too.
    app.add_middleware(SecurityHeaders)
    # Around everything, so every answer is timed, the refusals too.
    app.add_middleware(RequestTiming, measures=master.core.measures, paths=paths)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _with_stream_payloads(
                _without_422(
                    get_openapi(
                        title=app.title,
                        version=app.version,
                        description=app.description,
                        routes=app.routes,
                    )
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(AssayError)
    async def assay_error(_request: Request, exc: AssayError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            ErrorDetail(".".join(str(p) for p in err.get("loc", ()) if p != "body"), _says(err))
            for err in exc.errors()
        ]
        # The message names what is wrong, so a client that shows only it (the CLI) says so.
        said = "; ".join(f"{d.path}: {d.message}" if d.path else d.message for d in details)
        return _error(InvalidRequest(f"the request is not valid: {said}", details), status=400)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        # What the framework refuses itself (a body that is not JSON, a malformed
        # multipart body, an unknown path) gets
        # the same error shape as everything else.
        kind = _BY_STATUS.get(exc.status_code, AssayError)
        return _error(kind(str(exc.detail)), status=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error", exc_info=exc)
        return _error(AssayError(f"internal error: {type(exc).__name__}: {exc}"))

    return app


_BY_STATUS: dict[int, type[AssayError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: TooLarge,
    429: TooManyRequests,
}


_PATTERNS = {
    rest.NO_NUL: "must not contain NUL characters",
    _experiments.TRIAL_IDS: (
        f"must be trial ids separated by commas, at most {rest.MAX_SERIES_TRIALS} of them: "
        "ask in several reads for more"
    ),
    _checkpoints.MEMBER_PATH: (
        "must be a path inside the checkpoint: not absolute, not climbing out with '..', "
        "naming a file or a directory (such as model/weights.pt)"
    ),
}
"""What a string that does not match each pattern the routes use must be, in words."""


def _says(err: dict[str, Any]) -> str:
    """What a validation error says, in words for the patterns the wire shapes use."""
    pattern = (err.get("ctx") or {}).get("pattern")
    if err.get("type") == "string_pattern_mismatch" and pattern in _PATTERNS:
        return _PATTERNS[pattern]
    return str(err.get("msg"))


def _error(
    exc: AssayError, status: int | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(exc.to_json(), status_code=status or exc.status, headers=headers)


def _with_stream_payloads(schema: dict[str, Any]) -> dict[str, Any]:
    """Name the JSON carried inside server-sent events among the components: no route returns
    them as a body, yet clients generated from the document need their types."""
    from pydantic.json_schema import models_json_schema

    _, extra = models_json_schema(
        [(rest.EventBatch, "serialization"), (rest.EventResync, "serialization")],
        ref_template="#/components/schemas/{model}",
    )
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in extra.get("$defs", {}).items():
        components.setdefault(name, definition)
    return schema


def _without_422(schema: dict[str, Any]) -> dict[str, Any]:
    """FastAPI documents a 422 for every route with parameters; this API answers invalid
    requests with 400 and the error shape, which every route documents instead."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            operation.get("responses", {}).pop("422", None)
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return schema
