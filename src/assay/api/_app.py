"""The FastAPI application: routes, error shapes, and the master's start and stop."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

import assay
from assay.api import _cluster, _experiments, _harness, _jobs, _trials
from assay.api._docs import install_docs
from assay.api._limits import DEFAULT_BODY_LIMIT, BodyLimit
from assay.api._upload import UPLOAD_ROUTE_LIMIT
from assay.errors import AssayError, ErrorDetail, InvalidRequest, NotFound, TooLarge
from assay.master import Master

log = logging.getLogger(__name__)


_HTTP_ERRORS: dict[int, type[AssayError]] = {
    400: InvalidRequest,
    404: NotFound,
    413: TooLarge,
}


def create_app(master: Master) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await master.start()
        try:
            yield
        finally:
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
    for module in (_experiments, _trials, _harness, _jobs, _cluster):
        app.include_router(module.router)
    install_docs(app)
    app.add_middleware(
        BodyLimit,
        default=DEFAULT_BODY_LIMIT,
        routes={("POST", "/api/v1/experiments"): UPLOAD_ROUTE_LIMIT},
    )

    @app.exception_handler(AssayError)
    async def assay_error(_request: Request, exc: AssayError) -> JSONResponse:
        return JSONResponse(exc.to_json(), status_code=exc.status)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        # Raised by the framework itself: an unknown path, a malformed multipart body...
        kind = _HTTP_ERRORS.get(exc.status_code, AssayError)
        error = kind(str(exc.detail))
        return JSONResponse(error.to_json(), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            ErrorDetail(
                ".".join(str(p) for p in err.get("loc", ()) if p != "body"), str(err.get("msg"))
            )
            for err in exc.errors()
        ]
        error = InvalidRequest("the request is not valid", details)
        return JSONResponse(error.to_json(), status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error", exc_info=exc)
        error = AssayError(f"internal error: {type(exc).__name__}: {exc}")
        return JSONResponse(error.to_json(), status_code=500)

    return app
