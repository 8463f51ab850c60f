"""Experiment notes: the lines of an experiment's own log (what the master decided about it)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from assay.db._models import ExperimentNote

MAX_NOTE = 4096
"""The longest note kept; a longer one is cut (notes are one line for people)."""


def add(session: Session, experiment_id: int, text: str, now: float) -> ExperimentNote:
    """Append a note; newlines become spaces so that it stays one line of the log."""
    line = " ".join(text.split("\n"))[:MAX_NOTE]
    note = ExperimentNote(experiment_id=experiment_id, time=now, text=line)
    session.add(note)
    session.flush()
    return note


def of_experiment(
    session: Session, experiment_id: int, *, after: int = 0, limit: int = 1000
) -> Sequence[ExperimentNote]:
    """The experiment's notes with an id above ``after``, oldest first."""
    return session.scalars(
        select(ExperimentNote)
        .where(ExperimentNote.experiment_id == experiment_id, ExperimentNote.id > after)
        .order_by(ExperimentNote.id)
        .limit(limit)
    ).all()
