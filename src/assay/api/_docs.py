"""The API docs, Swagger UI at ``/docs`` and ReDoc at ``/redoc``, served whole by the master.

FastAPI's own pages load their scripts and styles from a CDN, so on a cluster without internet
access they stay blank. Here the assets come from the ``fastapi-offline`` package, which ships the
Swagger UI and ReDoc bundles, and every URL the pages name is the master's own.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
"""Where the Swagger UI and ReDoc files are served: ``swagger-ui-bundle.js``, ``swagger-ui.css``,
``redoc.standalone.js`` and ``favicon.png``."""

SWAGGER_UI = "/docs"
REDOC = "/redoc"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"


def install_docs(app: FastAPI) -> None:
    """Add the docs pages and their assets to ``app``, which must have been created with
    ``docs_url=None`` and ``redoc_url=None`` (FastAPI's CDN pages)."""
    openapi_url = app.openapi_url
    if openapi_url is None:
        raise ValueError("the API docs need the OpenAPI document; create the app with one")
    app.mount(ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="docs-assets")

    @app.get(SWAGGER_UI, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = _root(request)
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT}",
            # No validator badge: it would send the document to a public validator.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = _root(request)
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} API",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )


def _root(request: Request) -> str:
    """The prefix a proxy serves the master under (ASGI ``root_path``), without a trailing /."""
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")
