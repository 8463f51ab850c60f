"""Scheduling policies: pure functions of a pool snapshot and the time, returning decisions."""

from __future__ import annotations

from assay.scheduler._fit import fit
from assay.scheduler._model import (
    Agent,
    Decision,
    Fitting,
    Job,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
)
from assay.scheduler._priority import schedule_priority


def schedule(pool: PoolSnapshot, now: float) -> Decision:
    """Decide what to start and what to preempt in ``pool`` under its policy."""
    return schedule_priority(pool, now)


__all__ = [
    "Agent",
    "Decision",
    "Fitting",
    "Job",
    "PolicyKind",
    "PoolSnapshot",
    "Request",
    "Running",
    "fit",
    "schedule",
    "schedule_priority",
]
