"""Experiments: one row per submitted experiment (its config, state and searcher snapshot)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, TextClause, and_, func, select, text
from sqlalchemy.orm import Session

from assay.db._ids import next_id, record_deleted
from assay.db._models import Experiment, Trial
from assay.db._moves import move_storage
from assay.errors import NotFound
from assay.protocol import TERMINAL_EXPERIMENT_STATES, ExperimentState


def get(session: Session, experiment_id: int) -> Experiment | None:
    return session.get(Experiment, experiment_id)


def by_ids(session: Session, ids: Iterable[int]) -> dict[int, Experiment]:
    """The experiments of ``ids`` that exist, by id, in one query."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {e.id: e for e in session.scalars(select(Experiment).where(Experiment.id.in_(wanted)))}


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
    source: str = "assay",
) -> Experiment:
    """A new experiment, its id assigned (``source``: how its config was written)."""
    exp = Experiment(
        name=name,
        description=description,
        state=state,
        archived=False,
        config=config,
        original_config=original_config,
        source=source,
        context_id=context_id,
        job_id=job_id,
        seed=seed,
        progress=0.0,
        owner=owner,
        message="",
        created_at=created_at,
    )
    if (given := next_id(session, Experiment)) is not None:
        exp.id = given
    session.add(exp)
    session.flush()
    return exp


SORTS = ("id", "name", "state", "start", "end", "best", "user", "progress", "trials", "duration")
"""What :func:`page` sorts by (the values of ``rest.ExperimentSort``)."""


def page(
    session: Session,
    *,
    states: Iterable[str] = (),
    include_archived: bool = False,
    owner: str | None = None,
    name: str | None = None,
    label: str | None = None,
    sort: str = "id",
    descending: bool = True,
    limit: int = 100,
    offset: int = 0,
    now: float = 0.0,
    owners: Sequence[str] = (),
    labels: Sequence[str] = (),
    only_archived: bool = False,
    description: str | None = None,
) -> tuple[Sequence[Experiment], int]:
    """A page of experiments sorted by ``sort`` (one of :data:`SORTS`; ties by id the same
    way), filtered by state (any of ``states``; all when empty), ``owner``, a case-insensitive
    substring of the ``name`` and a ``label`` when given; and the total that match. Determined's
    list filters too: any of ``owners``, every one of ``labels``, a substring of the
    ``description``, and archived ones alone (``only_archived``).

    ``best`` sorts by each experiment's best trial's normalised score (ascending: best first);
    ``duration`` by the time from its first trial's start to its end, or to ``now`` while it
    runs; ``end``, ``best`` and ``duration`` put experiments without a value last either way."""
    conditions: list[ColumnElement[bool] | TextClause] = []
    if owner is not None:
        conditions.append(Experiment.owner == owner)
    if owners:
        conditions.append(Experiment.owner.in_(list(owners)))
    states = list(states)
    if states:
        conditions.append(Experiment.state.in_(states))
    if only_archived:
        conditions.append(Experiment.archived.is_(True))
    elif not include_archived:
        conditions.append(Experiment.archived.is_(False))
    if name:
        conditions.append(Experiment.name.icontains(name, autoescape=True))
    if description:
        conditions.append(Experiment.description.icontains(description, autoescape=True))
    for wanted in (*([] if label is None else [label]), *labels):
        conditions.append(_has_label(session, wanted))
    where = and_(*conditions) if conditions else and_(True)
    total = session.scalar(select(func.count()).select_from(Experiment).where(where)) or 0
    query = select(Experiment.id).where(where)
    key: Any
    if sort == "best":
        best = (
            select(Trial.experiment_id, func.min(Trial.best_score).label("score"))
            .where(Trial.best_score.is_not(None))
            .group_by(Trial.experiment_id)
            .subquery()
        )
        query = query.outerjoin(best, best.c.experiment_id == Experiment.id)
        key = best.c.score
    elif sort == "trials":
        counted = (
            select(Trial.experiment_id, func.count().label("trials"))
            .group_by(Trial.experiment_id)
            .subquery()
        )
        query = query.outerjoin(counted, counted.c.experiment_id == Experiment.id)
        key = func.coalesce(counted.c.trials, 0)
    elif sort == "duration":
        key = func.coalesce(Experiment.ended_at, now) - Experiment.started_at
    else:
        key = {
            "id": None,
            "name": Experiment.name,
            "state": Experiment.state,
            "start": Experiment.created_at,
            "end": Experiment.ended_at,
            "user": Experiment.owner,
            "progress": Experiment.progress,
        }[sort]
    order: list[Any] = []
    if key is not None:
        order.append(key.desc().nulls_last() if descending else key.asc().nulls_last())
    order.append(Experiment.id.desc() if descending else Experiment.id.asc())
    # The ids first, then only the page's rows: sorting whole rows (configs and all) of
    # thousands of experiments costs many times more.
    ids = list(session.scalars(query.order_by(*order).limit(limit).offset(offset)))
    found = by_ids(session, ids)
    return [found[i] for i in ids if i in found], int(total)


def _has_label(session: Session, label: str) -> TextClause:
    """The experiment's config lists ``label`` among its ``labels``."""
    if session.get_bind().dialect.name == "postgresql":
        return text("(experiments.config::jsonb -> 'labels') ? :label").bindparams(label=label)
    return text(
        "EXISTS (SELECT 1 FROM json_each(experiments.config, '$.labels') AS l "
        "WHERE l.value = :label)"
    ).bindparams(label=label)


def of_job(session: Session, job_id: str) -> Sequence[Experiment]:
    return session.scalars(select(Experiment).where(Experiment.job_id == job_id)).all()


def live_states(session: Session) -> list[tuple[int, str]]:
    """``(id, state)`` of each experiment that has not ended, read without loading the rows
    (a row holds its whole config: a check every second of every live experiment decoded them
    all)."""
    rows = session.execute(_LIVE_STATES).all()
    return [(int(i), str(s)) for i, s in rows]


_LIVE_STATES = select(Experiment.id, Experiment.state).where(
    Experiment.state.not_in(TERMINAL_EXPERIMENT_STATES)
)


def delete(session: Session, experiment_id: int) -> None:
    """Delete the experiment and every row of it: its trials' metrics, logs, allocations and
    checkpoints, its notes, its trials, its job, and its context when nothing else uses it."""
    from sqlalchemy import delete as sql_delete

    from assay.db._models import (
        Allocation,
        AllocationOwner,
        Checkpoint,
        Context,
        ExperimentNote,
        Job,
        Metric,
        SearcherEvent,
        SearcherSnapshot,
        Task,
        TaskLog,
        Trial,
    )

    exp = require(session, experiment_id)
    trial_ids = select(Trial.id).where(Trial.experiment_id == experiment_id)
    record_deleted(session, Experiment, experiment_id)
    record_deleted(
        session,
        Trial,
        session.scalar(select(func.max(Trial.id)).where(Trial.experiment_id == experiment_id)),
    )
    allocation_ids = select(Allocation.id).where(Allocation.trial_id.in_(trial_ids))
    session.execute(sql_delete(AllocationOwner).where(AllocationOwner.id.in_(allocation_ids)))
    for model, column in (
        (Metric, Metric.trial_id),
        (TaskLog, TaskLog.trial_id),
        (Allocation, Allocation.trial_id),
    ):
        session.execute(sql_delete(model).where(column.in_(trial_ids)))
    session.execute(sql_delete(Checkpoint).where(Checkpoint.experiment_id == experiment_id))
    session.execute(sql_delete(ExperimentNote).where(ExperimentNote.experiment_id == experiment_id))
    session.execute(sql_delete(SearcherEvent).where(SearcherEvent.experiment_id == experiment_id))
    session.execute(
        sql_delete(SearcherSnapshot).where(SearcherSnapshot.experiment_id == experiment_id)
    )
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


def update(
    session: Session,
    exp: Experiment,
    *,
    name: str | None = None,
    description: str | None = None,
    config: dict[str, Any] | None = None,
    message: str | None = None,
) -> None:
    """Change what is given of the experiment's name, description, config and message."""
    if name is not None:
        exp.name = name
    if description is not None:
        exp.description = description
    if config is not None:
        exp.config = config
    if message is not None:
        exp.message = message


def set_state(session: Session, exp: Experiment, *, state: ExperimentState) -> None:
    """The experiment moves to ``state`` without ending (:func:`end` ends it)."""
    exp.state = state


def end(session: Session, exp: Experiment, *, state: ExperimentState, at: float) -> None:
    """The experiment ended in ``state`` at ``at``; completed, it made all its progress."""
    exp.state = state
    exp.ended_at = at
    if state == ExperimentState.COMPLETED:
        exp.progress = 1.0


def set_progress(session: Session, exp: Experiment, progress: float) -> None:
    """The share of its search the experiment has done, from 0 to 1."""
    exp.progress = progress


def set_archived(session: Session, exp: Experiment, *, archived: bool) -> None:
    """Hide the experiment from lists that leave archived ones out, or show it again."""
    exp.archived = archived


def mark_started(session: Session, exp: Experiment, *, at: float) -> None:
    """The first of the experiment's trials started running at ``at``."""
    exp.started_at = at


def start_clock(session: Session, exp: Experiment, *, at: float) -> None:
    """The experiment became ACTIVE at ``at``: its ``max_duration`` clock runs from then."""
    exp.active_since = at


def stop_clock(session: Session, exp: Experiment, *, active_seconds: float) -> None:
    """The experiment is no longer ACTIVE: its clock stops at ``active_seconds`` in all."""
    exp.active_seconds = active_seconds
    exp.active_since = None


def merge_resources(
    session: Session, exp: Experiment, *, resources: dict[str, int | float | str | None]
) -> None:
    """The experiment's config says these ``resources`` (its job's priority, weight, slot limit
    or pool changed), so what it shows and what its typed config reads agree with its job."""
    config = dict(exp.config)
    config["resources"] = {**config.get("resources", {}), **resources}
    exp.config = config


def move_checkpoint_storage(session: Session, moves: Mapping[str, str]) -> list[int]:
    """Experiments whose ``shared_fs`` checkpoint storage is at (or under) an old path of
    ``moves`` keep it at the new one from now on; their ids."""
    return move_storage(session, Experiment, "config", moves)
