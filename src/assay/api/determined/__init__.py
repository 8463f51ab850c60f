"""Determined's REST API on assay's master, under ``/det``: what the real ``det`` CLI and
Determined's Python SDK call, answered in Determined's shapes (:mod:`assay.rest.determined`)."""

from __future__ import annotations

from assay.api.determined import (
    _checkpoints,
    _cluster,
    _experiments,
    _jobs,
    _models,
    _routes,
    _trials,
)
from assay.api.determined._base import PREFIX
from assay.api.determined._unknown import catch_all

SERVED = (
    _routes.router,
    _routes.signed_in,
    _experiments.router,
    _trials.router,
    _checkpoints.router,
    _models.router,
    _jobs.router,
    _cluster.router,
)
"""Every router of Determined's surface, in the order the app includes them."""

ROUTERS = (*SERVED, catch_all(SERVED), _routes.misdirected)
"""What the app includes for Determined's clients: the served routes, the catch-all for the
rest of ``/det``, and the answer to a ``DET_MASTER`` that lacks ``/det``."""

CREATE_LIMIT = _experiments.CREATE_LIMIT

__all__ = ["CREATE_LIMIT", "PREFIX", "ROUTERS", "SERVED"]
