"""Task logs: the lines trial processes wrote, in arrival order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from assay.db._models import TaskLog
from assay.protocol import LogEntry

_STREAM_WIDTH = 8


_COLUMNS = ("trial_id", "task_id", "allocation_id", "rank", "stream", "time", "line")
_COPY = f"COPY task_logs ({', '.join(_COLUMNS)}) FROM STDIN"


def _row(entry: LogEntry, task_id: int | None) -> tuple[Any, ...]:
    """A line as it is stored, its values in the order of ``_COLUMNS``: a job's lines
    (``task_id``) belong to no trial."""
    return (
        entry.trial_id if task_id is None else 0,
        task_id,
        entry.allocation_id,
        entry.rank,
        entry.stream[:_STREAM_WIDTH],
        entry.time,
        storable(entry.line),
    )


def insert(session: Session, entries: Iterable[LogEntry], *, task_id: int | None = None) -> None:
    """Store a trial's lines, or with ``task_id`` a job's."""
    rows = [_row(e, task_id) for e in entries]
    if not rows:
        return
    connection = session.connection()
    if (connection.dialect.name, connection.dialect.driver) != ("postgresql", "psycopg"):
        table = cast(Table, TaskLog.__table__)
        session.execute(table.insert(), [dict(zip(_COLUMNS, row, strict=True)) for row in rows])
        return
    # PostgreSQL takes the lines as one COPY stream in the session's transaction: an INSERT of
    # many rows went as one statement per row, and a large cluster's lines (8,000 a second at
    # a thousand agents, benchmark B13) were stored at a third of the rate they came, where
    # COPY takes a tenth of the CPU and a quarter of the time. The stream is psycopg's own, so
    # a refused line raises psycopg's error, not SQLAlchemy's wrapping of it (the group commit
    # that calls this takes any error as the write's, and stores its other writes alone).
    driver = connection.connection.driver_connection
    assert driver is not None, "a connection in a transaction has its driver's connection"
    with driver.cursor() as cursor, cursor.copy(_COPY) as copy:
        for row in rows:
            copy.write_row(row)


def storable(line: str) -> str:
    """``line`` as every database keeps it: PostgreSQL's text holds no NUL character (a
    process that prints binary output has its NULs shown as U+FFFD)."""
    return line.replace("\x00", "\ufffd") if "\x00" in line else line


_COMPARED = ("allocation_id", "rank", "stream", "time", "line")


def ends_with(
    session: Session, entry: LogEntry, *, trial_id: int | None = None, task_id: int | None = None
) -> bool:
    """Whether the trial's (or the job's) last stored line is ``entry``."""
    owner = TaskLog.trial_id == trial_id if task_id is None else TaskLog.task_id == task_id
    columns = [getattr(TaskLog, name) for name in _COMPARED]
    last = session.execute(
        select(*columns).where(owner).order_by(TaskLog.id.desc()).limit(1)
    ).first()
    stored = dict(zip(_COLUMNS, _row(entry, task_id), strict=True))
    return last is not None and tuple(last) == tuple(stored[name] for name in _COMPARED)


def after(session: Session, trial_id: int, after_id: int, limit: int) -> Sequence[TaskLog]:
    """Up to ``limit`` of the trial's lines with an id above ``after_id``, in order."""
    return session.scalars(
        select(TaskLog)
        .where(TaskLog.trial_id == trial_id, TaskLog.id > after_id)
        .order_by(TaskLog.id)
        .limit(limit)
    ).all()
