"""Queries the master and the API share. Every SELECT and bulk statement lives here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import Table, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from assay.db._models import (
    AgentRecord,
    Allocation,
    Checkpoint,
    Context,
    Experiment,
    Instance,
    Job,
    Metric,
    TaskLog,
    Trial,
)
from assay.protocol import (
    LIVE_ALLOCATION_STATES,
    TERMINAL_TRIAL_STATES,
    VALIDATION,
    CheckpointState,
    ExperimentState,
    TrialState,
)


def context_by_sha(session: Session, sha256: str) -> Context | None:
    return session.scalars(select(Context).where(Context.sha256 == sha256)).first()


def trial_by_request(session: Session, experiment_id: int, request_id: str) -> Trial | None:
    return session.scalars(
        select(Trial).where(Trial.experiment_id == experiment_id, Trial.request_id == request_id)
    ).first()


def live_trials(session: Session, experiment_id: int) -> Sequence[Trial]:
    return session.scalars(
        select(Trial)
        .where(Trial.experiment_id == experiment_id, Trial.state.not_in(TERMINAL_TRIAL_STATES))
        .order_by(Trial.id)
    ).all()


def trials_of(session: Session, experiment_id: int) -> Sequence[Trial]:
    return session.scalars(
        select(Trial).where(Trial.experiment_id == experiment_id).order_by(Trial.id)
    ).all()


def live_allocation(session: Session, trial_id: int) -> Allocation | None:
    return session.scalars(
        select(Allocation)
        .where(Allocation.trial_id == trial_id, Allocation.state.in_(LIVE_ALLOCATION_STATES))
        .order_by(Allocation.created_at.desc())
    ).first()


def allocations_of(session: Session, trial_id: int) -> Sequence[Allocation]:
    return session.scalars(
        select(Allocation).where(Allocation.trial_id == trial_id).order_by(Allocation.run)
    ).all()


def live_allocations(session: Session) -> Sequence[Allocation]:
    return session.scalars(
        select(Allocation).where(Allocation.state.in_(LIVE_ALLOCATION_STATES))
    ).all()


def preempting_allocations(session: Session) -> Sequence[tuple[Allocation, Trial, Experiment]]:
    """Live allocations asked to give their slots back and not yet killed."""
    rows = session.execute(
        select(Allocation, Trial, Experiment)
        .join(Trial, Allocation.trial_id == Trial.id)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .where(
            Allocation.state.in_(LIVE_ALLOCATION_STATES),
            Allocation.preempt.is_not(None),
            Allocation.kill_requested.is_(False),
            Allocation.overdue.is_(False),
        )
    ).all()
    return [(a, t, e) for a, t, e in rows]


def queued_trials(session: Session) -> Sequence[tuple[Trial, Experiment, Job]]:
    rows = session.execute(
        select(Trial, Experiment, Job)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .join(Job, Experiment.job_id == Job.id)
        .where(Trial.state == TrialState.QUEUED, Experiment.state == ExperimentState.ACTIVE)
        .order_by(Trial.id)
    ).all()
    return [(t, e, j) for t, e, j in rows]


def running_allocations_with_jobs(
    session: Session,
) -> Sequence[tuple[Allocation, Trial, Job]]:
    rows = session.execute(
        select(Allocation, Trial, Job)
        .join(Trial, Allocation.trial_id == Trial.id)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .join(Job, Experiment.job_id == Job.id)
        .where(Allocation.state.in_(LIVE_ALLOCATION_STATES))
    ).all()
    return [(a, t, j) for a, t, j in rows]


def latest_checkpoint(session: Session, trial_id: int) -> Checkpoint | None:
    return session.scalars(
        select(Checkpoint)
        .where(Checkpoint.trial_id == trial_id, Checkpoint.state == CheckpointState.ACTIVE)
        .order_by(Checkpoint.steps_completed.desc(), Checkpoint.reported_at.desc())
    ).first()


def archive_metrics_after(session: Session, trial_id: int, steps: int, before_run: int) -> None:
    """Mark reports of earlier runs past the step a restarted run resumes from as archived:
    the new run will report those steps again, and the series must not show both."""
    session.execute(
        update(Metric)
        .where(
            Metric.trial_id == trial_id,
            Metric.run < before_run,
            Metric.steps_completed > steps,
            Metric.archived.is_(False),
        )
        .values(archived=True)
    )


def insert_metrics(session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert metric reports, ignoring ones already stored (same trial, run, group, step)."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    table = cast(Table, Metric.__table__)
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(table).values(rows).on_conflict_do_nothing()
    else:
        stmt = sqlite.insert(table).values(rows).on_conflict_do_nothing()
    result = session.execute(stmt)
    return int(getattr(result, "rowcount", 0) or 0)


def improve_best_validation(session: Session, trial_id: int, value: float, score: float) -> bool:
    """Record ``value`` as the trial's best validation if it beats the stored one."""
    result = session.execute(
        update(Trial)
        .where(Trial.id == trial_id, or_(Trial.best_score.is_(None), Trial.best_score > score))
        .values(best_validation=value, best_score=score)
    )
    return bool(getattr(result, "rowcount", 0))


def raise_steps_completed(session: Session, trial_id: int, steps: int) -> None:
    """``steps_completed = max(steps_completed, steps)`` in one statement, so concurrent reports
    (metrics outside the master's lock, checkpoints inside it) never move it backwards."""
    session.execute(
        update(Trial)
        .where(Trial.id == trial_id, Trial.steps_completed < steps)
        .values(steps_completed=steps)
    )


def metric_series(
    session: Session, trial_id: int, group: str | None, *, include_archived: bool = False
) -> Sequence[Metric]:
    conditions = [Metric.trial_id == trial_id]
    if group is not None:
        conditions.append(Metric.group == group)
    if not include_archived:
        conditions.append(Metric.archived.is_(False))
    return session.scalars(
        select(Metric).where(and_(*conditions)).order_by(Metric.steps_completed, Metric.run)
    ).all()


def insert_logs(session: Session, rows: list[dict[str, Any]]) -> None:
    if rows:
        session.execute(cast(Table, TaskLog.__table__).insert(), rows)


def logs_after(session: Session, trial_id: int, after_id: int, limit: int) -> Sequence[TaskLog]:
    return session.scalars(
        select(TaskLog)
        .where(TaskLog.trial_id == trial_id, TaskLog.id > after_id)
        .order_by(TaskLog.id)
        .limit(limit)
    ).all()


def list_experiments(
    session: Session,
    *,
    states: Iterable[str] = (),
    include_archived: bool = False,
    limit: int = 100,
    offset: int = 0,
) -> tuple[Sequence[Experiment], int]:
    conditions = []
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


def trial_counts(session: Session, experiment_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {i: {} for i in experiment_ids}
    if not experiment_ids:
        return counts
    for exp_id, state, n in session.execute(
        select(Trial.experiment_id, Trial.state, func.count())
        .where(Trial.experiment_id.in_(experiment_ids))
        .group_by(Trial.experiment_id, Trial.state)
    ):
        counts[exp_id][state] = int(n)
    return counts


def best_trial(session: Session, experiment_id: int) -> Trial | None:
    return session.scalars(
        select(Trial)
        .where(Trial.experiment_id == experiment_id, Trial.best_score.is_not(None))
        .order_by(Trial.best_score, Trial.id)
    ).first()


def checkpoints_of(
    session: Session, *, experiment_id: int | None = None, trial_id: int | None = None
) -> Sequence[Checkpoint]:
    stmt = select(Checkpoint)
    if experiment_id is not None:
        stmt = stmt.where(Checkpoint.experiment_id == experiment_id)
    if trial_id is not None:
        stmt = stmt.where(Checkpoint.trial_id == trial_id)
    return session.scalars(stmt.order_by(Checkpoint.trial_id, Checkpoint.steps_completed)).all()


def agents(session: Session) -> Sequence[AgentRecord]:
    return session.scalars(select(AgentRecord).order_by(AgentRecord.id)).all()


def allocations_on_agent(session: Session, agent_id: str) -> list[Allocation]:
    """Live allocations holding slots on ``agent_id`` (slots is ``{agent_id: [slot ids]}``)."""
    return [a for a in live_allocations(session) if agent_id in (a.slots or {})]


def active_jobs(
    session: Session, pool: str | None, states: Sequence[str]
) -> list[tuple[Job, Experiment]]:
    """Jobs not done whose experiment is in one of ``states`` (in ``pool`` when given)."""
    stmt = (
        select(Job, Experiment)
        .join(Experiment, Experiment.job_id == Job.id)
        .where(Job.done.is_(False), Experiment.state.in_(states))
    )
    if pool is not None:
        stmt = stmt.where(Job.pool == pool)
    return [(j, e) for j, e in session.execute(stmt).all()]


def job_slot_usage(session: Session, job_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per job: slots its live allocations hold, and slots its queued trials ask for."""
    usage: dict[str, list[int]] = {job_id: [0, 0] for job_id in job_ids}
    if not job_ids:
        return {}
    held = session.execute(
        select(Experiment.job_id, Allocation.slots)
        .join(Trial, Allocation.trial_id == Trial.id)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .where(Experiment.job_id.in_(job_ids), Allocation.state.in_(LIVE_ALLOCATION_STATES))
    ).all()
    for job_id, slots in held:
        usage[job_id][0] += sum(len(s) for s in (slots or {}).values())
    queued = session.execute(
        select(Experiment.job_id, Experiment.config, func.count())
        .join(Trial, Trial.experiment_id == Experiment.id)
        .where(Experiment.job_id.in_(job_ids), Trial.state == TrialState.QUEUED)
        .group_by(Experiment.job_id, Experiment.id)
    ).all()
    for job_id, config, n in queued:
        per_trial = int((config.get("resources") or {}).get("slots_per_trial", 1))
        usage[job_id][1] += per_trial * int(n)
    return {job_id: (a, b) for job_id, (a, b) in usage.items()}


def queued_slot_demand(session: Session, pool: str) -> int:
    """Slots the queued trials of ``pool``'s active experiments ask for."""
    rows = session.execute(
        select(Experiment.config, func.count())
        .join(Trial, Trial.experiment_id == Experiment.id)
        .join(Job, Experiment.job_id == Job.id)
        .where(
            Job.pool == pool,
            Trial.state == TrialState.QUEUED,
            Experiment.state == ExperimentState.ACTIVE,
        )
        .group_by(Experiment.id)
    ).all()
    return sum(int((c.get("resources") or {}).get("slots_per_trial", 1)) * int(n) for c, n in rows)


def used_slots(session: Session) -> dict[str, set[str]]:
    """Slot ids held by live allocations, per agent."""
    used: dict[str, set[str]] = {}
    for alloc in live_allocations(session):
        for agent_id, slots in (alloc.slots or {}).items():
            used.setdefault(agent_id, set()).update(str(s) for s in slots)
    return used


def busy_agents(session: Session) -> set[str]:
    """Agents running at least one live allocation (zero-slot ones included)."""
    return {agent for alloc in live_allocations(session) for agent in (alloc.slots or {})}


def instances(
    session: Session, pool: str | None, states: Sequence[str] | None
) -> Sequence[Instance]:
    stmt = select(Instance)
    if pool is not None:
        stmt = stmt.where(Instance.pool == pool)
    if states is not None:
        stmt = stmt.where(Instance.state.in_(states))
    return session.scalars(stmt.order_by(Instance.launched_at, Instance.id)).all()


def validation_values(
    session: Session, experiment_id: int, metric: str | None
) -> list[tuple[int, int, Any]]:
    """``(trial, steps_completed, value of metric)`` of the experiment's current validations."""
    if metric is None:
        return []
    rows = session.execute(
        select(Metric.trial_id, Metric.steps_completed, Metric.values)
        .join(Trial, Metric.trial_id == Trial.id)
        .where(
            Trial.experiment_id == experiment_id,
            Metric.group == VALIDATION,
            Metric.archived.is_(False),
        )
    ).all()
    return [(t, s, (v or {}).get(metric)) for t, s, v in rows]


def experiments_collecting(session: Session) -> list[int]:
    """Experiments with checkpoints marked for deletion that were not deleted yet."""
    rows = session.execute(
        select(Checkpoint.experiment_id)
        .where(Checkpoint.state == CheckpointState.DELETING)
        .distinct()
    ).all()
    return [int(r[0]) for r in rows]


def experiments_of_job(session: Session, job_id: str) -> Sequence[Experiment]:
    return session.scalars(select(Experiment).where(Experiment.job_id == job_id)).all()


def max_queue_position(session: Session) -> float:
    return float(session.scalar(select(func.max(Job.queue_position))) or 0.0)
