"""Jobs: what the queue orders (each experiment has one)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from assay.db._models import Allocation, Experiment, Job, Task, TaskInstance, Trial
from assay.protocol import (
    LIVE_ALLOCATION_STATES,
    TERMINAL_TASK_STATES,
    TaskInstanceState,
    TrialState,
)


def get(session: Session, job_id: str) -> Job | None:
    return session.get(Job, job_id)


def create(
    session: Session,
    *,
    job_id: str,
    type: str,
    name: str,
    pool: str,
    priority: int,
    weight: float,
    max_slots: int | None,
    submitted_at: float,
    owner: str,
) -> Job:
    """A new job, queued behind every job there is."""
    job = Job(
        id=job_id,
        type=type,
        name=name,
        pool=pool,
        priority=priority,
        weight=weight,
        max_slots=max_slots,
        queue_position=_max_queue_position(session) + 1.0,
        submitted_at=submitted_at,
        owner=owner,
        done=False,
    )
    session.add(job)
    session.flush()
    return job


def _max_queue_position(session: Session) -> float:
    return float(session.scalar(select(func.max(Job.queue_position))) or 0.0)


def update(
    session: Session,
    job: Job,
    *,
    priority: int | None = None,
    weight: float | None = None,
    pool: str | None = None,
) -> None:
    """The job's priority, fair-share weight and resource pool, each one given."""
    if priority is not None:
        job.priority = priority
    if weight is not None:
        job.weight = weight
    if pool is not None:
        job.pool = pool


def set_max_slots(session: Session, job: Job, *, max_slots: int | None) -> None:
    """The most slots the job may hold at once (None: no limit)."""
    job.max_slots = max_slots


def move(
    session: Session,
    job: Job,
    *,
    queue_position: float,
    priority: int,
    renumbered: Sequence[tuple[Job, float]] = (),
) -> None:
    """The job takes ``queue_position`` at ``priority`` (beside the job it was moved ahead of
    or behind); each job of ``renumbered`` takes its new position to make room."""
    job.queue_position = queue_position
    job.priority = priority
    for other, position in renumbered:
        other.queue_position = position


def mark_done(session: Session, job: Job) -> None:
    """Nothing of the job runs or waits any more: the queue leaves it out from now on."""
    job.done = True


def active(
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


def slot_usage(session: Session, job_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Per experiment's job: slots its live allocations hold, and how many of its trials are
    queued (the slots each asks for are its typed config's to say)."""
    usage: dict[str, list[int]] = {job_id: [0, 0] for job_id in job_ids}
    if not job_ids:
        return {}
    # Summed in SQL: the job queue is read often, and a large cluster has thousands of live
    # allocations whose slots' JSON would otherwise be decoded on every read.
    held = session.execute(
        select(Experiment.job_id, func.sum(Allocation.slot_count))
        .join(Trial, Allocation.trial_id == Trial.id)
        .join(Experiment, Trial.experiment_id == Experiment.id)
        .where(Experiment.job_id.in_(job_ids), Allocation.state.in_(LIVE_ALLOCATION_STATES))
        .group_by(Experiment.job_id)
    ).all()
    for job_id, n in held:
        usage[job_id][0] += int(n or 0)
    queued = session.execute(
        select(Experiment.job_id, func.count())
        .join(Trial, Trial.experiment_id == Experiment.id)
        .where(Experiment.job_id.in_(job_ids), Trial.state == TrialState.QUEUED)
        .group_by(Experiment.job_id)
    ).all()
    for job_id, n in queued:
        usage[job_id][1] += int(n)
    return {job_id: (a, b) for job_id, (a, b) in usage.items()}


def active_tasks(session: Session, pool: str | None) -> list[tuple[Job, Task]]:
    """Jobs of tasks (jobs that are not experiments) not done, in ``pool`` when given."""
    stmt = (
        select(Job, Task)
        .join(Task, Task.job_id == Job.id)
        .where(Job.done.is_(False), Task.state.not_in(TERMINAL_TASK_STATES))
    )
    if pool is not None:
        stmt = stmt.where(Job.pool == pool)
    return [(j, t) for j, t in session.execute(stmt).all()]


def task_slot_usage(session: Session, tasks: Sequence[Task]) -> dict[str, tuple[int, int]]:
    """Per task job: slots its live instances hold, and slots its waiting instances ask for."""
    if not tasks:
        return {}
    by_task = {t.id: t for t in tasks}
    usage = {t.job_id: [0, 0] for t in tasks}
    rows = session.scalars(
        select(TaskInstance).where(TaskInstance.task_id.in_(list(by_task)))
    ).all()
    for inst in rows:
        task = by_task[inst.task_id]
        if inst.live:
            usage[task.job_id][0] += len(inst.slots or [])
        elif inst.state == TaskInstanceState.WAITING:
            roles = {r["name"]: r for r in (task.spec or {}).get("roles", [])}
            usage[task.job_id][1] += int(roles.get(inst.role, {}).get("slots", 0))
    return {job_id: (a, b) for job_id, (a, b) in usage.items()}


def set_name(session: Session, job: Job, *, name: str) -> None:
    """The name the job queue shows for the job."""
    job.name = name
