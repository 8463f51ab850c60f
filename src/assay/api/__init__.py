"""The REST API (FastAPI): one module per noun, errors as ``{"error": {...}}``."""

from __future__ import annotations

from assay.api._app import create_app
from assay.api._spec import openapi_document, write_openapi

__all__ = ["create_app", "openapi_document", "write_openapi"]
