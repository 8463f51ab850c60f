"""Timestamps of a trial's way through the system, for finding where time goes.

With ``ASSAY_TRACE=1`` in the environment of the master and the agents, each marks the moments
an allocation passes (its exit seen, recorded, the next one scheduled, started, spawned) as a
DEBUG line of the ``assay.trace`` logger: ``trace EVENT ALLOCATION WALL_TIME``. Off (the
default), a mark costs one level check.
"""

from __future__ import annotations

import logging
import os
import time

TRACE_ENV = "ASSAY_TRACE"
log = logging.getLogger("assay.trace")


def enable_trace_from_env() -> None:
    """Turn the marks on when ``ASSAY_TRACE`` is set to anything but empty or 0."""
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        log.setLevel(logging.DEBUG)


def trace_mark(event: str, allocation_id: str) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("trace %s %s %.6f", event, allocation_id, time.time())
