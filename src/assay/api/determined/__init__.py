"""Determined's REST API on assay's master, under ``/det``: what the real ``det`` CLI and
Determined's Python SDK call, answered in Determined's shapes (:mod:`assay.rest.determined`)."""

from __future__ import annotations

from assay.api.determined._routes import PREFIX, misdirected, router, signed_in, unknown

__all__ = ["PREFIX", "misdirected", "router", "signed_in", "unknown"]
