"""Task logs: the lines trial processes wrote, in arrival order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from assay.db._models import TaskLog
from assay.protocol import LogEntry

_STREAM_WIDTH = 8


def insert(session: Session, entries: Iterable[LogEntry]) -> None:
    rows = [
        {
            "trial_id": e.trial_id,
            "allocation_id": e.allocation_id,
            "rank": e.rank,
            "stream": e.stream[:_STREAM_WIDTH],
            "time": e.time,
            "line": e.line,
        }
        for e in entries
    ]
    if rows:
        session.execute(cast(Table, TaskLog.__table__).insert(), rows)


def after(session: Session, trial_id: int, after_id: int, limit: int) -> Sequence[TaskLog]:
    """Up to ``limit`` of the trial's lines with an id above ``after_id``, in order."""
    return session.scalars(
        select(TaskLog)
        .where(TaskLog.trial_id == trial_id, TaskLog.id > after_id)
        .order_by(TaskLog.id)
        .limit(limit)
    ).all()
