"""The REST API (FastAPI): one module per noun, errors as ``{"error": {...}}``."""

from __future__ import annotations

from assay.api._app import create_app

__all__ = ["create_app"]
