"""Which experiments and trials a transaction changed: what the master tells live viewers about.

A session asked to :func:`track` records, at every flush, the experiments and trials it created,
deleted, or changed in a column a viewer sees (state, progress, steps...). The ids are read at
the end of the transaction with :func:`changed`; columns no viewer shows (a searcher snapshot)
do not count, so a transaction that only touched those publishes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.orm import Session

from assay.db._models import Experiment, Trial

_KEY = "assay.changes"

EXPERIMENT_COLUMNS = (
    "name",
    "description",
    "state",
    "archived",
    "progress",
    "message",
    "ended_at",
    "config",
)
TRIAL_COLUMNS = (
    "state",
    "restarts",
    "runs",
    "steps_completed",
    "latest_checkpoint",
    "best_validation",
    "progress",
    "early_stopped",
    "early_exit",
    "message",
    "ended_at",
)


@dataclass
class Changes:
    experiments: set[int] = field(default_factory=set)
    deleted_experiments: dict[int, Experiment] = field(default_factory=dict)
    """As they were when deleted."""
    trials: set[int] = field(default_factory=set)


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


def changed(session: Session) -> Changed:
    """What ``session`` changed since :func:`track` (pending changes flushed first)."""
    session.flush()
    found = session.info.get(_KEY)
    if not isinstance(found, Changes):
        return Changed([], [], [])
    exps = [session.get(Experiment, i) for i in sorted(found.experiments)]
    trials = [session.get(Trial, i) for i in sorted(found.trials)]
    return Changed(
        experiments=[e for e in exps if e is not None],
        deleted_experiments=[e for _, e in sorted(found.deleted_experiments.items())],
        trials=[t for t in trials if t is not None],
    )


def _modified(obj: Any, columns: tuple[str, ...]) -> bool:
    attrs = inspect(obj).attrs
    return any(attrs[name].history.has_changes() for name in columns)


@event.listens_for(Session, "after_flush")
def _collect(session: Session, _context: Any) -> None:
    changes = session.info.get(_KEY)
    if not isinstance(changes, Changes):
        return
    for obj in session.new:
        if isinstance(obj, Experiment):
            changes.experiments.add(obj.id)
        elif isinstance(obj, Trial):
            changes.trials.add(obj.id)
    for obj in session.dirty:
        if isinstance(obj, Experiment) and _modified(obj, EXPERIMENT_COLUMNS):
            changes.experiments.add(obj.id)
        elif isinstance(obj, Trial) and _modified(obj, TRIAL_COLUMNS):
            changes.trials.add(obj.id)
    for obj in session.deleted:
        if isinstance(obj, Experiment):
            changes.deleted_experiments[obj.id] = obj
            changes.experiments.discard(obj.id)
