"""Experiments: one row per submitted experiment (its config, state and searcher snapshot)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from assay.db._models import Experiment
from assay.errors import NotFound
from assay.protocol import TERMINAL_EXPERIMENT_STATES, ExperimentState


def get(session: Session, experiment_id: int) -> Experiment | None:
    return session.get(Experiment, experiment_id)


def require(session: Session, experiment_id: int) -> Experiment:
    """The experiment, or :class:`NotFound`."""
    exp = session.get(Experiment, experiment_id)
    if exp is None:
        raise NotFound(f"experiment {experiment_id} not found")
    return exp


def create(
    session: Session,
    *,
    name: str,
    description: str,
    state: ExperimentState,
    config: dict[str, Any],
    original_config: str,
    context_id: int,
    job_id: str,
    seed: int,
    owner: str,
    created_at: float,
) -> Experiment:
    """A new experiment, its id assigned."""
    exp = Experiment(
        name=name,
        description=description,
        state=state,
        archived=False,
        config=config,
        original_config=original_config,
        context_id=context_id,
        job_id=job_id,
        seed=seed,
        searcher_state=None,
        progress=0.0,
        owner=owner,
        message="",
        created_at=created_at,
    )
    session.add(exp)
    session.flush()
    return exp


def page(
    session: Session,
    *,
    states: Iterable[str] = (),
    include_archived: bool = False,
    owner: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[Sequence[Experiment], int]:
    """Experiments newest first, filtered by state (any of ``states``; all when empty) and by
    ``owner`` when given, and the total that match."""
    conditions = []
    if owner is not None:
        conditions.append(Experiment.owner == owner)
    states = list(states)
    if states:
        conditions.append(Experiment.state.in_(states))
    if not include_archived:
        conditions.append(Experiment.archived.is_(False))
    where = and_(*conditions) if conditions else and_(True)
    total = session.scalar(select(func.count()).select_from(Experiment).where(where)) or 0
    rows = session.scalars(
        select(Experiment).where(where).order_by(Experiment.id.desc()).limit(limit).offset(offset)
    ).all()
    return rows, int(total)


def of_job(session: Session, job_id: str) -> Sequence[Experiment]:
    return session.scalars(select(Experiment).where(Experiment.job_id == job_id)).all()


def live(session: Session) -> Sequence[Experiment]:
    """Experiments that have not ended (active, paused or stopping)."""
    return session.scalars(
        select(Experiment).where(Experiment.state.not_in(TERMINAL_EXPERIMENT_STATES))
    ).all()


def delete(session: Session, experiment_id: int) -> None:
    """Delete the experiment and every row of it: its trials' metrics, logs, allocations and
    checkpoints, its notes, its trials, its job, and its context when nothing else uses it."""
    from sqlalchemy import delete as sql_delete

    from assay.db._models import (
        Allocation,
        Checkpoint,
        Context,
        ExperimentNote,
        Job,
        Metric,
        Task,
        TaskLog,
        Trial,
    )

    exp = require(session, experiment_id)
    trial_ids = select(Trial.id).where(Trial.experiment_id == experiment_id)
    for model, column in (
        (Metric, Metric.trial_id),
        (TaskLog, TaskLog.trial_id),
        (Allocation, Allocation.trial_id),
    ):
        session.execute(sql_delete(model).where(column.in_(trial_ids)))
    session.execute(sql_delete(Checkpoint).where(Checkpoint.experiment_id == experiment_id))
    session.execute(sql_delete(ExperimentNote).where(ExperimentNote.experiment_id == experiment_id))
    session.execute(sql_delete(Trial).where(Trial.experiment_id == experiment_id))
    job_id, context_id = exp.job_id, exp.context_id
    session.delete(exp)
    session.flush()
    session.execute(sql_delete(Job).where(Job.id == job_id))
    used = session.scalar(
        select(func.count()).select_from(Experiment).where(Experiment.context_id == context_id)
    ) or session.scalar(select(func.count()).select_from(Task).where(Task.context_id == context_id))
    if not used:
        session.execute(sql_delete(Context).where(Context.id == context_id))
