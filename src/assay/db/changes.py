"""Which experiments and trials a transaction changed: what the master tells live viewers about.

A session asked to :func:`track` records, at every flush, the experiments and trials it created,
deleted, or changed in a column a viewer sees (state, progress, steps...). The ids are read at
the end of the transaction with :func:`changed`; columns no viewer shows (a searcher snapshot)
do not count, so a transaction that only touched those publishes nothing. Changes to the job
queue (jobs, tasks, their instances, allocations) and to the cluster (agents, taken slots) are
recorded as two flags: their pages read them again whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.orm import Session

from assay.db import trials
from assay.db._models import AgentRecord, Allocation, Experiment, Job, Task, TaskInstance, Trial

_KEY = "assay.changes"

EXPERIMENT_COLUMNS = (
    "name",
    "description",
    "state",
    "archived",
    "progress",
    "message",
    "started_at",
    "ended_at",
    "config",
)
TRIAL_COLUMNS = (
    "state",
    "restarts",
    "infra_restarts",
    "runs",
    "steps_completed",
    "latest_checkpoint",
    "best_validation",
    "progress",
    "early_stopped",
    "early_exit",
    "message",
    "started_at",
    "ended_at",
)
JOB_COLUMNS = ("name", "pool", "priority", "weight", "max_slots", "queue_position", "done")
TASK_COLUMNS = ("state", "attempt", "retrying", "stop_requested", "exit_code", "message")
INSTANCE_COLUMNS = ("state", "live", "started", "agent_id", "slots", "exit_code", "message")
ALLOCATION_COLUMNS = ("state", "started_at", "ended_at", "released")
AGENT_COLUMNS = ("pool", "labels", "slots", "enabled", "connected")
_FLAGGED: tuple[tuple[type, tuple[str, ...], bool, bool], ...] = (
    # (row kind, the columns shown, raises queue, raises cluster)
    (Job, JOB_COLUMNS, True, False),
    (Task, TASK_COLUMNS, True, False),
    (Allocation, ALLOCATION_COLUMNS, True, True),
    (TaskInstance, INSTANCE_COLUMNS, True, True),
    (AgentRecord, AGENT_COLUMNS, False, True),
)


@dataclass
class Changes:
    experiments: dict[int, Experiment] = field(default_factory=dict)
    """Held, not only named: the session's identity map holds rows weakly, and one dropped after
    its flush would be read again by :func:`changed` (trials are read again all at once, as
    stored)."""
    deleted_experiments: dict[int, Experiment] = field(default_factory=dict)
    """As they were when deleted."""
    trials: set[int] = field(default_factory=set)
    queue: bool = False
    cluster: bool = False
    held: list[object] = field(default_factory=list)
    """Every row the transaction loaded, to its end: one step of it dropping a row it read
    would have the next step read it again (an exit's transaction read its allocation, trial
    and experiment twice)."""


def track(session: Session) -> None:
    """Record what ``session`` changes from now on."""
    session.info[_KEY] = Changes()


@dataclass(frozen=True)
class Changed:
    """The rows, as the transaction leaves them, by id."""

    experiments: list[Experiment]
    deleted_experiments: list[Experiment]
    """As they were when deleted."""
    trials: list[Trial]
    queue: bool = False
    cluster: bool = False


def changed(session: Session) -> Changed:
    """What ``session`` changed since :func:`track` (pending changes flushed first)."""
    session.flush()
    found = session.info.get(_KEY)
    if not isinstance(found, Changes):
        return Changed([], [], [])
    exps = [session.get(Experiment, i) for i in sorted(found.experiments)]
    return Changed(
        experiments=[e for e in exps if e is not None],
        deleted_experiments=[e for _, e in sorted(found.deleted_experiments.items())],
        trials=trials.as_stored(session, sorted(found.trials)),
        queue=found.queue,
        cluster=found.cluster,
    )


def _modified(obj: Any, columns: tuple[str, ...]) -> bool:
    attrs = inspect(obj).attrs
    return any(attrs[name].history.has_changes() for name in columns)


@event.listens_for(Session, "loaded_as_persistent")
def _hold(session: Session, instance: object) -> None:
    changes = session.info.get(_KEY)
    if isinstance(changes, Changes):
        changes.held.append(instance)


@event.listens_for(Session, "after_flush")
def _collect(session: Session, _context: Any) -> None:
    changes = session.info.get(_KEY)
    if not isinstance(changes, Changes):
        return
    for obj in session.new:
        if isinstance(obj, Experiment):
            changes.experiments[obj.id] = obj
        elif isinstance(obj, Trial):
            changes.trials.add(obj.id)
        else:
            _flag(changes, obj, whole=True)
    for obj in session.dirty:
        if isinstance(obj, Experiment) and _modified(obj, EXPERIMENT_COLUMNS):
            changes.experiments[obj.id] = obj
        elif isinstance(obj, Trial) and _modified(obj, TRIAL_COLUMNS):
            changes.trials.add(obj.id)
        else:
            _flag(changes, obj, whole=False)
    for obj in session.deleted:
        _flag(changes, obj, whole=True)
        if isinstance(obj, Experiment):
            changes.deleted_experiments[obj.id] = obj
            changes.experiments.pop(obj.id, None)


def _flag(changes: Changes, obj: object, *, whole: bool) -> None:
    """Raise the queue or cluster flags of ``obj``'s kind of row when it was added or deleted
    (``whole``) or changed in a column their pages show."""
    for kind, columns, queue, cluster in _FLAGGED:
        if isinstance(obj, kind):
            if whole or _modified(obj, columns):
                changes.queue = changes.queue or queue
                changes.cluster = changes.cluster or cluster
            return
