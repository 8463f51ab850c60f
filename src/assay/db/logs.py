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
            "line": storable(e.line),
        }
        for e in entries
    ]
    if rows:
        session.execute(cast(Table, TaskLog.__table__).insert(), rows)


def storable(line: str) -> str:
    """``line`` as every database keeps it: PostgreSQL's text holds no NUL character (a
    process that prints binary output has its NULs shown as U+FFFD)."""
    return line.replace("\x00", "\ufffd") if "\x00" in line else line


def ends_with(
    session: Session, entry: LogEntry, *, trial_id: int | None = None, task_id: int | None = None
) -> bool:
    """Whether the trial's (or the job's) last stored line is ``entry``."""
    owner = TaskLog.trial_id == trial_id if task_id is None else TaskLog.task_id == task_id
    last = session.execute(
        select(TaskLog.allocation_id, TaskLog.rank, TaskLog.stream, TaskLog.time, TaskLog.line)
        .where(owner)
        .order_by(TaskLog.id.desc())
        .limit(1)
    ).first()
    wanted = (
        entry.allocation_id,
        entry.rank,
        entry.stream[:_STREAM_WIDTH],
        entry.time,
        storable(entry.line),
    )
    return last is not None and tuple(last) == wanted


def after(session: Session, trial_id: int, after_id: int, limit: int) -> Sequence[TaskLog]:
    """Up to ``limit`` of the trial's lines with an id above ``after_id``, in order."""
    return session.scalars(
        select(TaskLog)
        .where(TaskLog.trial_id == trial_id, TaskLog.id > after_id)
        .order_by(TaskLog.id)
        .limit(limit)
    ).all()
