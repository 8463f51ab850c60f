"""The REST API (FastAPI): one module per noun, errors as ``{"error": {...}}``."""

from __future__ import annotations

from assay.rest import build_requests_when_made

# Before any route is declared: a route's body is adapted when its route is made.
build_requests_when_made()

from assay.api._app import create_app  # noqa: E402
from assay.api._spec import openapi_document, write_openapi  # noqa: E402

__all__ = ["create_app", "openapi_document", "write_openapi"]
