"""Searcher events: each experiment's searcher is its last snapshot plus the events after it.

The master appends the events a searcher handled (a few hundred bytes each) in the transaction
that acts on them, and now and then writes a full snapshot and drops the events it includes
(compaction), so the cost of an event stays flat however long the search has run, while a
restart replays at most the events since the last snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.orm import Session, object_session

from assay.db._models import Experiment, SearcherEvent, SearcherSnapshot

_INSERT = insert(cast(Table, SearcherEvent.__table__))
"""Rows of the table, not the ORM's bulk insert: the master appends one every time a searcher
handles an event, and the plain statement, built once, costs a fraction of it."""


def append(session: Session, exp: Experiment, events: Sequence[dict[str, Any]]) -> None:
    """Log ``events`` after the experiment's last one (numbering them on)."""
    if not events:
        return
    first = exp.searcher_seq + 1
    # The rows depend on nothing pending: the experiment's other changes (its progress, say)
    # go out with its new sequence number in one UPDATE rather than a flush of their own.
    with session.no_autoflush:
        session.execute(
            _INSERT,
            [
                {"experiment_id": exp.id, "seq": first + i, "event": event}
                for i, event in enumerate(events)
            ],
        )
    exp.searcher_seq = first + len(events) - 1


def after_snapshot(exp: Experiment) -> list[dict[str, Any]]:
    """The events the snapshot of an experiment loaded in a session does not include, oldest
    first."""
    session = object_session(exp)
    if session is None:
        raise ValueError(f"experiment {exp.id} is not loaded in a session")
    rows = session.scalars(
        select(SearcherEvent.event)
        .where(
            SearcherEvent.experiment_id == exp.id,
            SearcherEvent.seq > exp.searcher_snapshot_seq,
        )
        .order_by(SearcherEvent.seq)
    ).all()
    return list(rows)


def pending(exp: Experiment) -> int:
    """How many logged events the snapshot does not include (what a restart replays)."""
    return exp.searcher_seq - exp.searcher_snapshot_seq


def snapshot(exp: Experiment) -> dict[str, Any] | None:
    """The last searcher snapshot of an experiment loaded in a session (None before the
    first)."""
    session = object_session(exp)
    if session is None:
        raise ValueError(f"experiment {exp.id} is not loaded in a session")
    state: dict[str, Any] | None = session.scalar(
        select(SearcherSnapshot.state).where(SearcherSnapshot.experiment_id == exp.id)
    )
    return state


def compact(session: Session, exp: Experiment, snapshot: dict[str, Any], *, handled: int) -> None:
    """Store ``snapshot``: the searcher after every logged event and ``handled`` more, which
    need no rows of their own; the logged events are dropped."""
    had_events = pending(exp) > 0
    exp.searcher_seq += handled
    replaced = session.execute(
        update(SearcherSnapshot)
        .where(SearcherSnapshot.experiment_id == exp.id)
        .values(state=snapshot)
        .execution_options(synchronize_session=False)
    )
    if not getattr(replaced, "rowcount", 0):
        session.execute(insert(SearcherSnapshot).values(experiment_id=exp.id, state=snapshot))
    exp.searcher_snapshot_seq = exp.searcher_seq
    if had_events:
        session.execute(delete(SearcherEvent).where(SearcherEvent.experiment_id == exp.id))
