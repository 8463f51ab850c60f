"""Scheduling policies: pure functions of a pool snapshot and the time, returning decisions.

:func:`schedule` runs the pool's policy: ``priority`` (strict queue order with backfilling and
preemption) or ``fair_share`` (weighted max-min shares); ``assay.scheduler.testing`` checks any
:data:`Policy` against the rules every decision keeps. The job-queue rules behind ``assay job
update`` and the autoscaling decisions of provider-backed pools live here too, equally free of
IO.

Jobs that are not experiments ask for gangs: a request with parts (:class:`Part`), one per
instance, each on one agent with its slots, cores and memory, started all together or not at all
(:func:`fit_parts`; :func:`never_fits` says when a pool could never hold them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from assay.scheduler._autoscale import Instance, ProviderSettings, ScalingDecision, decide_scaling
from assay.scheduler._fair_share import schedule_fair_share
from assay.scheduler._model import (
    DEFAULT_PRIORITY,
    Agent,
    Decision,
    Fitting,
    InconsistentSnapshot,
    Job,
    JobKind,
    Part,
    PartPlacement,
    Placement,
    Policy,
    PolicyKind,
    PoolSnapshot,
    Request,
    Running,
)
from assay.scheduler._parts import fit_parts, never_fits
from assay.scheduler._priority import schedule_priority
from assay.scheduler._queue import (
    JobUpdate,
    QueueMove,
    move_ahead_of,
    move_behind_of,
    order_jobs,
    validate_batch,
)

_POLICIES: dict[PolicyKind, Policy] = {
    PolicyKind.PRIORITY: schedule_priority,
    PolicyKind.FAIR_SHARE: schedule_fair_share,
}


def schedule(pool: PoolSnapshot, now: float) -> Decision:
    """Decide what to start, what waits for slots and what to preempt in ``pool`` (by the
    pool's policy)."""
    with _collector_paused():
        return _POLICIES[pool.policy](pool, now)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one pass.

    A pass makes a great many small objects and no reference cycles; the collector, triggered
    by the allocations alone, would walk every live object of the process (in the master, far
    more than the snapshot) looking for cycles that are not there. What the pass discards is
    freed by reference counting either way.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


__all__ = [
    "DEFAULT_PRIORITY",
    "Agent",
    "Decision",
    "Fitting",
    "InconsistentSnapshot",
    "Instance",
    "Job",
    "JobKind",
    "JobUpdate",
    "Part",
    "PartPlacement",
    "Placement",
    "Policy",
    "PolicyKind",
    "PoolSnapshot",
    "ProviderSettings",
    "QueueMove",
    "Request",
    "Running",
    "ScalingDecision",
    "decide_scaling",
    "fit_parts",
    "move_ahead_of",
    "move_behind_of",
    "never_fits",
    "order_jobs",
    "schedule",
    "validate_batch",
]
