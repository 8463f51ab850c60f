"""The routers every part of Determined's surface is made of: under ``/det``, answering errors
in Determined's shape, left out of assay's OpenAPI document (it describes assay's own API, and
the web UI's types are made from it; Determined's is described by Determined's own)."""

from __future__ import annotations

from fastapi import APIRouter

from assay.api._deps import SIGNED_IN
from assay.api.determined._errors import DeterminedRoute

PREFIX = "/det"
"""Where Determined's paths live on the master: its clients form every URL as ``DET_MASTER``
plus the path, so with ``DET_MASTER=http://HOST:PORT/det`` they never meet assay's own."""


def open_router() -> APIRouter:
    """Routes anyone may call (the master's info, signing in)."""
    return APIRouter(prefix=PREFIX, route_class=DeterminedRoute, include_in_schema=False)


def signed_router() -> APIRouter:
    """Routes for a signed-in user: an assay session or access token as ``Bearer``."""
    return APIRouter(
        prefix=PREFIX, route_class=DeterminedRoute, include_in_schema=False, dependencies=SIGNED_IN
    )
